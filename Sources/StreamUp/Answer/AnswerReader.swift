/// Reads a receiver's answer for records it refused while it stored the others: the seam
/// between a receiver's own way of saying so and the uploader's delivery decisions.
///
/// ``StreamUploader`` hands every answer to a segment to its reader (``StreamUploader/Options/answerReader``),
/// with a way to get the records the request carried (each without its `\n`, read from the
/// replay buffer only when the reader asks). A nil result means the answer says nothing about
/// single records: its status decides, as without a reader. A ``PartialFailure`` overrides the
/// status: the refused records are reported and kept (`deadLetterDirectory`), never sent
/// again, and what the receiver did not process is sent again.
///
/// The built-in readers follow each receiver's documented answers (cited in their files);
/// ``Receiver`` presets set them. Write your own for another receiver.
///
/// Thread safety: immutable; the closure is `@Sendable` and called from the delivery task.
package struct AnswerReader: Sendable {
    /// Reads one answer; `records` returns the request's records in order.
    package typealias Read = @Sendable (_ answer: UploadResponse, _ records: () -> [[UInt8]]) -> PartialFailure?

    /// Says whether a refusal is one that no retry fixes, whatever its status.
    package typealias Permanent = @Sendable (_ answer: UploadResponse) -> Bool

    /// Names the receiver in messages.
    package let name: String
    private let read: Read
    private let permanent: Permanent

    /// - Parameters:
    ///   - name: the receiver's name, for messages.
    ///   - permanent: answers that are final although their status is retried (a ClickHouse
    ///     500 for an unknown column); by default none.
    ///   - read: what the receiver refused in an answer, or nil when it refused nothing.
    package init(name: String, permanent: @escaping Permanent = { _ in false }, _ read: @escaping Read) {
        self.name = name
        self.read = read
        self.permanent = permanent
    }

    /// What `answer` says about the records `records` returns.
    package func partialFailure(in answer: UploadResponse, records: () -> [[UInt8]]) -> PartialFailure? {
        read(answer, records)
    }

    /// Whether `answer` refuses the request for good (retrying cannot fix it).
    package func isPermanent(_ answer: UploadResponse) -> Bool {
        !answer.isSuccess && permanent(answer)
    }

    /// Elasticsearch and OpenSearch `_bulk`: `errors:true` items (`ElasticsearchBulkAnswer`).
    package static let elasticsearchBulk = AnswerReader(name: "Elasticsearch") { ElasticsearchBulkAnswer.read($0, records: $1) }
    /// Splunk HEC: `invalid-event-number` (`SplunkHECAnswer`).
    package static let splunkHEC = AnswerReader(name: "Splunk HEC") { SplunkHECAnswer.read($0, records: $1) }
    /// OTLP/HTTP: `partialSuccess` (`OTLPAnswer`).
    package static let otlp = AnswerReader(name: "OTLP") { OTLPAnswer.read($0, records: $1) }
    /// Loki push: a 400 listing the ignored entries (`LokiAnswer`).
    package static let loki = AnswerReader(name: "Loki") { LokiAnswer.read($0, records: $1) }
    /// ClickHouse HTTP: no partial failures; exception codes no retry fixes are final (`ClickHouseAnswer`).
    package static let clickHouse = AnswerReader(name: "ClickHouse", permanent: ClickHouseAnswer.isPermanent) { _, _ in nil }
}
