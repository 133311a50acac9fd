import Foundation
import StreamUpHTTP

// The exchange's last stage: what came back, in the delivery machine's terms. The receivers'
// own words are read in Answer/ (``AnswerReader``); here they become stream offsets, and an
// answer or a failure becomes what the machine decides on.

/// What the delivery machine reads of an exchange's answer, or of its failure: the status and
/// the fields it acts on, and which failures no retry fixes.
extension DeliveryMachine.Answer {
    /// The parts of `response` (to a request sent to `url`) the machine looks at; `reader`
    /// knows the receiver's refusals no retry fixes.
    init(_ response: UploadResponse, to url: URL?, reader: AnswerReader?) {
        var location: String?
        if let value = response.value(forHeader: "Location"), let base = url,
            let resolved = URL(string: value, relativeTo: base)?.absoluteURL, resolved.scheme == "http" || resolved.scheme == "https"
        {
            location = resolved.absoluteString
        }
        self.init(
            status: response.statusCode, retryAfter: response.value(forHeader: "Retry-After"), uploadOffset: response.uploadOffset,
            uploadComplete: response.uploadComplete, location: location, firstLine: response.isSuccess ? nil : response.firstLine(),
            permanent: reader?.isPermanent(response) ?? false)
    }
}

extension DeliveryMachine.Failure {
    /// What kind of failure `error` is, for the retry policy: TLS certificate failures and
    /// bodies that cannot be sent are final (retrying cannot fix them), cancellation stops, the
    /// rest is retried.
    init(_ error: StreamUpError) {
        if error.code == .cancelled {
            self.init(kind: .cancelled, message: error.description)
        } else if let urlError = error.urlError,
            TransportFailure.isCertificateFailure(code: urlError.code.rawValue, text: urlError.localizedDescription)
        {
            // On Linux a certificate failure is code -1 with libcurl's text (TransportFailure).
            self.init(kind: .certificate, message: error.description)
        } else if error.code == .invalidConfiguration {
            // A body that cannot be sent as configured (records holding the multipart boundary)
            // fails the same way every time.
            self.init(kind: .unsendable, message: error.description)
        } else {
            self.init(kind: .transport, message: error.description)
        }
    }

    /// A 2xx that came before the server had the whole body: libcurl stopped reading the body
    /// (`sent` of its `length` bytes) when the answer ended, so the server answered before it
    /// had the rest and cannot hold it (a server that reads only the head). nil otherwise.
    static func earlyAnswer(_ response: UploadResponse, sent: Int, of length: Int) -> Self? {
        guard response.isSuccess, sent < length else { return nil }
        let message =
            "the server answered \(response.statusCode) before the request body ended, after \(sent) of its \(counted(length, "byte")): "
            + "it did not read the rest, so the segment is not delivered"
        return Self(kind: .earlyAnswer, message: StreamUpError(.protocolError, message).description)
    }
}

/// Partial failures in stream offsets: a reader's record numbers become the byte ranges of the
/// records a request carried, for the `DeliveryMachine` (DeliveryMachine+Partial).
extension AnswerReader {
    typealias Machine = DeliveryMachine<UploadClock.Instant>

    /// What `response` says about the records of the request that carried `carried` of
    /// `buffer`, in stream offsets; nil when it says nothing. The records are read from the
    /// buffer only when the answer names some.
    func partial(in response: UploadResponse, carried: Range<Int>, of buffer: ReplayBuffer) -> Machine.Partial? {
        guard !carried.isEmpty else { return nil }
        var loaded: [Range<Int>]?
        var bytes: [UInt8] = []
        func records() -> [Range<Int>] {
            if let loaded { return loaded }
            let ranges = Self.readRecords(carried, of: buffer, into: &bytes)
            loaded = ranges
            return ranges
        }
        let failure = partialFailure(in: response) {
            records().map { Array(bytes[($0.lowerBound - carried.lowerBound)..<($0.upperBound - carried.lowerBound - 1)]) }
        }
        guard let failure else { return nil }
        return failure.offsets(records: records(), carried: carried)
    }

    /// The byte ranges of the records (lines) in `range` of `buffer`, whose bytes are appended
    /// to `bytes`. A last piece without `\n` (the end of the input) is a record too.
    private static func readRecords(_ range: Range<Int>, of buffer: ReplayBuffer, into bytes: inout [UInt8]) -> [Range<Int>] {
        bytes.reserveCapacity(range.count)
        do {
            try buffer.copy(range) { bytes.append(contentsOf: $0) }
        } catch {
            return []
        }
        var ranges: [Range<Int>] = []
        var start = 0
        for (index, byte) in bytes.enumerated() where byte == 0x0A {
            ranges.append((range.lowerBound + start)..<(range.lowerBound + index + 1))
            start = index + 1
        }
        if start < bytes.count {
            // A record without its newline: pad so every range's last byte can be dropped.
            ranges.append((range.lowerBound + start)..<(range.lowerBound + bytes.count + 1))
            bytes.append(0x0A)
        }
        return ranges
    }
}

extension PartialFailure {
    /// This failure in stream offsets: its record numbers are indexes into `records` (the byte
    /// ranges of the request's records, each with its `\n`). A number outside the request
    /// makes the refusal unidentified (the whole request is kept).
    func offsets(records: [Range<Int>], carried: Range<Int>) -> DeliveryMachine<UploadClock.Instant>.Partial {
        typealias Machine = DeliveryMachine<UploadClock.Instant>
        var partial = Machine.Partial()
        let numbers = rejected.map(\.index) + (unprocessedFrom.map { [$0] } ?? [])
        guard numbers.allSatisfy({ records.indices.contains($0) }) else {
            partial.rejection = Machine.RecordRejection(
                records: [.init(range: carried, reason: summary)], count: max(rejectedCount, 1), whole: true,
                summary: "\(summary) (the answer names records the request did not carry; the whole request is kept)")
            return partial
        }
        if unidentified > 0 {
            partial.rejection = Machine.RecordRejection(
                records: [.init(range: carried, reason: summary)], count: rejectedCount, whole: true, summary: summary)
        } else if !rejected.isEmpty {
            let refused = rejected.sorted { $0.index < $1.index }.map {
                Machine.RecordRejection.Record(range: records[$0.index].clamped(to: carried), reason: $0.reason)
            }
            partial.rejection = Machine.RecordRejection(records: refused, count: refused.count, whole: false, summary: summary)
        } else {
            partial.warning = summary
        }
        partial.unprocessedFrom = unprocessedFrom.map { records[$0].lowerBound }
        partial.backoff = backoff
        return partial
    }
}
