import Foundation

/// Partial failures: the options' ``AnswerReader`` reads each segment's answer, its record
/// numbers become stream offsets for the `DeliveryMachine`, and the records it refused are
/// reported and kept (DeliveryMachine+Partial).
extension StreamUploader {
    /// What `response` says about the records of the request that carried `carried`, in stream
    /// offsets; nil when there is no reader or it says nothing.
    func partial(in response: UploadResponse, carried: Range<Int>) -> Machine.Partial? {
        guard let reader = options.answerReader, !carried.isEmpty else { return nil }
        var loaded: [Range<Int>]?
        var bytes: [UInt8] = []
        func records() -> [Range<Int>] {
            if let loaded { return loaded }
            let ranges = readRecords(carried, into: &bytes)
            loaded = ranges
            return ranges
        }
        let failure = reader.partialFailure(in: response) {
            records().map { Array(bytes[($0.lowerBound - carried.lowerBound)..<($0.upperBound - carried.lowerBound - 1)]) }
        }
        guard let failure else { return nil }
        let ranges = records()
        return Self.offsets(of: failure, records: ranges, carried: carried)
    }

    /// `failure` in stream offsets: its record numbers are indexes into `records` (the byte
    /// ranges of the request's records, each with its `\n`). A number outside the request
    /// makes the refusal unidentified (the whole request is kept).
    static func offsets(of failure: PartialFailure, records: [Range<Int>], carried: Range<Int>) -> Machine.Partial {
        var partial = Machine.Partial()
        let numbers = failure.rejected.map(\.index) + (failure.unprocessedFrom.map { [$0] } ?? [])
        guard numbers.allSatisfy({ records.indices.contains($0) }) else {
            partial.rejection = Machine.RecordRejection(
                records: [.init(range: carried, reason: failure.summary)], count: max(failure.rejectedCount, 1), whole: true,
                summary: "\(failure.summary) (the answer names records the request did not carry; the whole request is kept)")
            return partial
        }
        if failure.unidentified > 0 {
            partial.rejection = Machine.RecordRejection(
                records: [.init(range: carried, reason: failure.summary)], count: failure.rejectedCount, whole: true, summary: failure.summary)
        } else if !failure.rejected.isEmpty {
            let rejected = failure.rejected.sorted { $0.index < $1.index }.map {
                Machine.RecordRejection.Record(range: records[$0.index].clamped(to: carried), reason: $0.reason)
            }
            partial.rejection = Machine.RecordRejection(records: rejected, count: rejected.count, whole: false, summary: failure.summary)
        } else {
            partial.warning = failure.summary
        }
        partial.unprocessedFrom = failure.unprocessedFrom.map { records[$0].lowerBound }
        partial.backoff = failure.backoff
        return partial
    }

    /// The byte ranges of the records (lines) in `range` of the buffer, whose bytes are
    /// appended to `bytes`. A last piece without `\n` (the end of the input) is a record too.
    private func readRecords(_ range: Range<Int>, into bytes: inout [UInt8]) -> [Range<Int>] {
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

    /// Reports refused records and, with a dead-letter directory, keeps them (all of them in
    /// one pair of files per answer; the whole request when the answer did not say which).
    func reject(_ rejection: Machine.RecordRejection, answer: UploadResponse?) throws {
        var file: String?
        if let deadLetters {
            if rejection.whole, let range = rejection.records.first?.range {
                file = try deadLetters.keep(range, of: buffer, streamID: streamID, url: configuration.url, reason: rejection.summary, answer: answer)
            } else {
                file = try deadLetters.keep(
                    records: rejection.records.map { ($0.range, $0.reason) }, of: buffer, streamID: streamID, url: configuration.url,
                    reason: rejection.summary, answer: answer)
            }
        }
        state.withLock { $0.rejectedRecords += rejection.count }
        onEvent(.recordsRejected(count: rejection.count, reason: rejection.summary, file: file))
    }
}
