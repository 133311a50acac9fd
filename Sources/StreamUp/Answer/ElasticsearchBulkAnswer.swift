import Foundation

/// Reads an Elasticsearch/OpenSearch `_bulk` answer. A 200 with `"errors": true` has one item
/// per action, in request order, each with its own `status` (and `error` when it failed):
/// https://www.elastic.co/guide/en/elasticsearch/reference/8.17/docs-bulk.html#bulk-api-response-body
/// (OpenSearch: https://opensearch.org/docs/latest/api-reference/document-apis/bulk/#response).
///
/// - An item answered 409 `version_conflict_engine_exception` is a document whose `_id` the
///   index already holds: streamup names each document by its stream and offset
///   (``Envelope/elasticsearchBulk()``), so that document is one an earlier request stored
///   (its answer was lost): delivered.
/// - An item with another 4xx than 429 is a refused document (a mapping error, an invalid
///   index): rejected, never sent again.
/// - An item with 429 (`es_rejected_execution_exception`: a full write queue) or a 5xx was not
///   indexed for a passing reason: from the first such item on, the documents are sent again
///   after a backoff (documents after it that were indexed may then be indexed twice: the
///   `create` action with automatic ids cannot tell).
/// - When the items do not line up with the documents sent (another count, an answer cut at
///   the response limit), the failures cannot be placed: the whole request is kept.
///
/// The answer is read without building it whole: the top-level `"errors"` flag is found by a
/// byte scan (Elasticsearch writes it before `"items"`, so `errors:false` costs a look at the
/// head), and only with `errors:true` is each item, found by the same scan, read on its own. A
/// bulk answer of 10,000 items parsed whole took over 100 MiB.
///
/// Thread safety: stateless.
enum ElasticsearchBulkAnswer {
    static func read(_ answer: UploadResponse, records: () -> [[UInt8]]) -> PartialFailure? {
        guard answer.isSuccess else { return nil }
        let scan = answer.body.withUnsafeBytes { BulkScan($0) }
        guard scan.errors == true else { return nil }
        guard scan.complete else {
            // Only a failure worth reading is worth this much text: say so when it is cut.
            return PartialFailure(
                unidentified: 1,
                summary: "Elasticsearch reported failed documents in an answer too long to read (\(answer.body.count) bytes kept); the whole request is kept")
        }
        let count = records().count
        var rejected: [PartialFailure.Rejection] = []
        var retryFrom: Int?
        var failedCount = 0
        for (index, range) in scan.items.enumerated() {
            let item =
                try? JSONSerialization.jsonObject(with: answer.body[(answer.body.startIndex + range.lowerBound)..<(answer.body.startIndex + range.upperBound)])
                as? [String: Any]
            guard let result = item?.values.first as? [String: Any], let status = result["status"] as? Int else { continue }
            guard status >= 300, !isAlreadyStored(status: status, result["error"]) else { continue }
            failedCount += 1
            if status == 429 || status >= 500 {
                retryFrom = retryFrom ?? index
            } else if retryFrom == nil {
                rejected.append(PartialFailure.Rejection(index: index, reason: reason(status: status, result["error"])))
            }
        }
        let items = scan.items
        guard items.count == count else {
            return PartialFailure(
                unidentified: failedCount,
                summary: "Elasticsearch answered \(items.count) items for \(count) documents, \(failedCount) failed; the whole request is kept")
        }
        // Every failure was a document stored before: the request is delivered.
        guard failedCount > 0 else { return nil }
        let first = rejected.first.map { ": \($0.reason)" } ?? ""
        var summary = "Elasticsearch refused \(rejected.count) of \(count) documents\(first)"
        if let retryFrom {
            summary += "; documents from number \(retryFrom + 1) on were not indexed for now (\(items.count - retryFrom) sent again after a backoff)"
        }
        return PartialFailure(rejected: rejected, unprocessedFrom: retryFrom, backoff: retryFrom != nil, summary: summary)
    }

    /// One pass over a bulk answer's bytes that builds no values: the top-level `"errors"`
    /// flag and the byte ranges of the objects in the top-level `"items"` array. It stops at
    /// `"errors":false`; `complete` says whether the answer's top-level object ended (it is
    /// not cut at the response limit).
    struct BulkScan {
        var errors: Bool?
        var items: [Range<Int>] = []
        var complete = false

        init(_ bytes: UnsafeRawBufferPointer) {
            var depth = 0
            var index = 0
            var key: Range<Int>?  // the last string at depth 1 (a key once its `:` comes)
            var value: Range<Int>?  // the key whose value comes next at depth 1
            var inItems = false
            var itemStart: Int?
            func named(_ range: Range<Int>?, _ name: StaticString) -> Bool {
                guard let range, range.count == name.utf8CodeUnitCount else { return false }
                return name.withUTF8Buffer { $0.elementsEqual(bytes[range]) }
            }
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    var end = index + 1
                    while end < bytes.count, bytes[end] != UInt8(ascii: "\"") { end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1 }
                    if depth == 1 { key = (index + 1)..<min(end, bytes.count) }
                    index = end
                case UInt8(ascii: ":") where depth == 1:
                    value = key
                case UInt8(ascii: "t"), UInt8(ascii: "f"):
                    if depth == 1, named(value, "errors") {
                        errors = byte == UInt8(ascii: "t")
                        if errors == false { return }
                    }
                    value = nil
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                    if depth == 2, byte == UInt8(ascii: "["), named(value, "items") { inItems = true }
                    if depth == 3, inItems, byte == UInt8(ascii: "{") { itemStart = index }
                    if depth == 2 { value = nil }
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    if depth == 3, let start = itemStart {
                        items.append(start..<(index + 1))
                        itemStart = nil
                    }
                    depth -= 1
                    if depth == 1 { inItems = false }
                    if depth == 0 {
                        complete = true
                        return
                    }
                default:
                    break
                }
                index += 1
            }
        }
    }

    /// Whether an item's failure says the document's `_id` exists (409
    /// `version_conflict_engine_exception` to a `create`).
    private static func isAlreadyStored(status: Int, _ error: Any?) -> Bool {
        status == 409 && (error as? [String: Any])?["type"] as? String == "version_conflict_engine_exception"
    }

    /// `400 document_parsing_exception: failed to parse field [n]`.
    private static func reason(status: Int, _ error: Any?) -> String {
        guard let error = error as? [String: Any] else { return "\(status) \(String(describing: error ?? "error"))" }
        let type = error["type"] as? String ?? "error"
        let text = error["reason"] as? String
        return "\(status) \(type)" + (text.map { ": \($0)" } ?? "")
    }
}
