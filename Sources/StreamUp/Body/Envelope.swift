/// The bytes an `EnvelopeStage` puts around a body of records:
/// `head + prefix + record + suffix + (separator + prefix + record + suffix)… + tail`; or, for
/// a Loki push (``lokiStreams``), `head + streams + tail`, the records gathered into streams.
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
    /// Where a body knows which stream bytes it carries (a cut segment), each record's prefix
    /// is this one instead, with the record's identity in it (nil: `recordPrefix` always).
    package var identifiedPrefix: IdentifiedPrefix?
    /// Where the records are Loki entries gathered into streams per host and shard between
    /// `head` and `tail` (`LokiStreamsStage`; the record prefix, suffix and separator unused),
    /// nil: the records in order.
    package var lokiStreams: LokiStreams?

    /// A record prefix that names its record: `before + identity + after`, where the identity
    /// is `STREAM-OFFSET`, the stream's id and the record's offset in it (JSON string content).
    /// The same record has the same identity in every request that carries it, however the
    /// segments around it are cut, and after a restart from the spool, which keeps the stream's
    /// id and offsets: a receiver that keeps one document per identity stores a resend once.
    ///
    /// Thread safety: a value type.
    package struct IdentifiedPrefix: Equatable, Sendable {
        package var before: [UInt8]
        package var after: [UInt8]

        /// `before + STREAM-OFFSET + after`.
        func prefix(stream: [UInt8], offset: Int) -> [UInt8] {
            before + stream + Array("-\(offset)".utf8) + after
        }
    }

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
    /// action line, every line ending in `\n` as the API requires. In a segment the action names
    /// the document, `{"create":{"_id":"STREAM-OFFSET"}}`: `create` of an `_id` that exists
    /// answers that item 409 and stores nothing, so a resent document is stored once.
    /// https://www.elastic.co/guide/en/elasticsearch/reference/current/docs-bulk.html
    package static func elasticsearchBulk() -> Envelope {
        var envelope = Envelope(recordPrefix: Array("{\"create\":{}}\n".utf8), recordSuffix: Array("\n".utf8))
        envelope.identifiedPrefix = IdentifiedPrefix(before: Array(#"{"create":{"_id":""#.utf8), after: Array("\"}}\n".utf8))
        return envelope
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
