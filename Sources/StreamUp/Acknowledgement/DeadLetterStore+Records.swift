import Foundation
import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Single records a receiver refused while it stored the others (a partial failure): one pair
/// of files per answer, named by stream and the first record's offset, like a refused segment's:
/// - `STREAM-OFFSET.body`: the refused records, each as it was in the stream (with its `\n`);
/// - `STREAM-OFFSET.json`: when, where to, the summary, the answer, and per record its offset,
///   size and the receiver's reason (`records`).
extension DeadLetterStore {
    /// The record of a set of refused records, as written to the `.json` file.
    ///
    /// Thread safety: a value type.
    private struct RecordsFile: Encodable {
        struct Record: Encodable {
            var offset: Int
            var bytes: Int
            var reason: String
        }
        var stream: String
        var offset: String
        var bytes: String
        var url: String
        var reason: String
        var time: String
        var status: String?
        var answer: String?
        var records: [Record]
    }

    /// Writes the records `records` (byte ranges of `buffer`, ascending) and their record;
    /// returns the body file's path.
    func keep(
        records: [(range: Range<Int>, reason: String)], of buffer: ReplayBuffer, streamID: String, url: URL, reason: String,
        answer: UploadResponse?
    ) throws -> String {
        guard let first = records.first else { preconditionFailure("no records to keep") }
        let name = try writeBody(records.map(\.range), of: buffer, streamID: streamID)
        let file = RecordsFile(
            stream: streamID, offset: String(first.range.lowerBound), bytes: String(records.reduce(0) { $0 + $1.range.count }),
            url: Self.shown(url), reason: SecretRedaction.redactingURLs(in: reason), time: RFC3339.string(from: Date()),
            status: answer.map { String($0.statusCode) }, answer: answer.map { SecretRedaction.redactingURLs(in: String($0.bodyText.prefix(2000))) },
            records: records.map { RecordsFile.Record(offset: $0.range.lowerBound, bytes: $0.range.count, reason: $0.reason) })
        try writeRecord(file, name: name)
        return name + ".body"
    }
}
