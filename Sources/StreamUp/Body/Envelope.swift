/// The bytes an `EnvelopeStage` puts around a body of records:
/// `head + prefix + record + suffix + (separator + prefix + record + suffix)… + tail`.
///
/// Thread safety: a value type; safe to pass anywhere.
package struct Envelope: Equatable, Sendable {
    /// Before the first record (also sent when there are no records).
    package var head: [UInt8]
    /// Before each record.
    package var recordPrefix: [UInt8]
    /// After each record.
    package var recordSuffix: [UInt8]
    /// Between two records (after the suffix of one, before the prefix of the next).
    package var separator: [UInt8]
    /// After the last record (also sent when there are no records).
    package var tail: [UInt8]
    /// Whether a record keeps its `\n` (placed before the suffix). A last record the lower stage
    /// ends without a `\n` gets none either way.
    package var keepsNewline: Bool
    /// Bytes the records must not contain (a multipart boundary; empty: no check). A body whose
    /// records hold them fails before those bytes are sent (``MultipartForm``).
    package var recordsMustNotContain: [UInt8]

    package init(
        head: [UInt8] = [], recordPrefix: [UInt8] = [], recordSuffix: [UInt8] = [], separator: [UInt8] = [],
        tail: [UInt8] = [], keepsNewline: Bool = false, recordsMustNotContain: [UInt8] = []
    ) {
        self.head = head
        self.recordPrefix = recordPrefix
        self.recordSuffix = recordSuffix
        self.separator = separator
        self.tail = tail
        self.keepsNewline = keepsNewline
        self.recordsMustNotContain = recordsMustNotContain
    }

    /// One JSON array of the records: `[r1,r2,…]` (each record must be a JSON value).
    package static let jsonArray = Envelope(head: Array("[".utf8), separator: Array(",".utf8), tail: Array("]".utf8))

    /// An Elasticsearch/OpenSearch `_bulk` body: each record (a JSON document) preceded by its
    /// action line, every line ending in `\n` as the API requires.
    /// https://www.elastic.co/guide/en/elasticsearch/reference/current/docs-bulk.html
    package static func elasticsearchBulk(action: String = #"{"create":{}}"#) -> Envelope {
        Envelope(recordPrefix: Array((action + "\n").utf8), recordSuffix: Array("\n".utf8))
    }

    /// A `multipart/form-data` body holding the records, unchanged, as one file part named `name`.
    /// The request's `Content-Type` is `multipart/form-data; boundary=<boundary>`; a request
    /// whose records hold the boundary fails (use a long random one: ``MultipartForm``, which
    /// also adds text fields). In `name` and `filename`, `"`, CR and LF are percent-encoded.
    package static func multipartFile(
        boundary: String, name: String = "file", filename: String, contentType: String = "application/octet-stream"
    ) -> Envelope {
        let head =
            "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(MultipartForm.quoted(name))\"; "
            + "filename=\"\(MultipartForm.quoted(filename))\"\r\nContent-Type: \(contentType)\r\n\r\n"
        return Envelope(
            head: Array(head.utf8), tail: Array("\r\n--\(boundary)--\r\n".utf8), keepsNewline: true,
            recordsMustNotContain: Array(boundary.utf8))
    }
}
