import Foundation

/// Reads an Elasticsearch/OpenSearch `_bulk` answer. A 200 with `"errors": true` has one item
/// per action, in request order, each with its own `status` (and `error` when it failed):
/// https://www.elastic.co/guide/en/elasticsearch/reference/8.17/docs-bulk.html#bulk-api-response-body
/// (OpenSearch: https://opensearch.org/docs/latest/api-reference/document-apis/bulk/#response).
///
/// - An item with a 4xx other than 429 is a refused document (a mapping error, an invalid
///   index, a version conflict): rejected, never sent again.
/// - An item with 429 (`es_rejected_execution_exception`: a full write queue) or a 5xx was not
///   indexed for a passing reason: from the first such item on, the documents are sent again
///   after a backoff (documents after it that were indexed may then be indexed twice: the
///   `create` action with automatic ids cannot tell).
/// - When the items do not line up with the documents sent (another count, an answer cut at
///   the response limit), the failures cannot be placed: the whole request is kept.
///
/// Thread safety: stateless.
enum ElasticsearchBulkAnswer {
    static func read(_ answer: UploadResponse, records: () -> [[UInt8]]) -> PartialFailure? {
        guard answer.isSuccess else { return nil }
        let object = try? JSONSerialization.jsonObject(with: answer.body) as? [String: Any]
        if let object, (object["errors"] as? Bool) != true { return nil }
        guard let object, let items = object["items"] as? [[String: Any]] else {
            // Only a failure worth reading is worth this much text: say so when it is cut.
            guard answer.bodyText.contains(#""errors":true"#) else { return nil }
            return PartialFailure(
                unidentified: 1,
                summary: "Elasticsearch reported failed documents in an answer too long to read (\(answer.body.count) bytes kept); the whole request is kept")
        }
        let count = records().count
        var rejected: [PartialFailure.Rejection] = []
        var retryFrom: Int?
        var failedCount = 0
        for (index, item) in items.enumerated() {
            guard let result = item.values.first as? [String: Any], let status = result["status"] as? Int else { continue }
            guard status >= 300 else { continue }
            failedCount += 1
            if status == 429 || status >= 500 {
                retryFrom = retryFrom ?? index
            } else if retryFrom == nil {
                rejected.append(PartialFailure.Rejection(index: index, reason: reason(status: status, result["error"])))
            }
        }
        guard items.count == count else {
            return PartialFailure(
                unidentified: failedCount,
                summary: "Elasticsearch answered \(items.count) items for \(count) documents, \(failedCount) failed; the whole request is kept")
        }
        let first = rejected.first.map { ": \($0.reason)" } ?? ""
        var summary = "Elasticsearch refused \(rejected.count) of \(count) documents\(first)"
        if let retryFrom {
            summary += "; documents from number \(retryFrom + 1) on were not indexed for now (\(items.count - retryFrom) sent again after a backoff)"
        }
        return PartialFailure(rejected: rejected, unprocessedFrom: retryFrom, backoff: retryFrom != nil, summary: summary)
    }

    /// `400 document_parsing_exception: failed to parse field [n]`.
    private static func reason(status: Int, _ error: Any?) -> String {
        guard let error = error as? [String: Any] else { return "\(status) \(String(describing: error ?? "error"))" }
        let type = error["type"] as? String ?? "error"
        let text = error["reason"] as? String
        return "\(status) \(type)" + (text.map { ": \($0)" } ?? "")
    }
}
