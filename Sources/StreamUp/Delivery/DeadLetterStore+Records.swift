import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import StreamUpSystem

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
        if mkdir(directory, 0o755) != 0 && errno != EEXIST {
            throw StreamUpError(.io, "cannot create the dead-letter directory \(directory)", errno: errno)
        }
        let name = "\(directory)/\(streamID)-\(String(format: "%020d", first.range.lowerBound))"
        let bodyFile = name + ".body"
        let descriptor = try SystemCall.runBlocking("cannot create \(bodyFile)") {
            SystemCall.open(bodyFile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC)
        }
        defer { SystemCall.close(descriptor) }
        for record in records {
            try buffer.copy(record.range) { piece in
                try SystemCall.writeAll(descriptor, piece, "cannot write \(bodyFile)")
            }
        }
        try SystemCall.runBlocking("cannot sync \(bodyFile)") { fsync(descriptor) }
        let file = RecordsFile(
            stream: streamID, offset: String(first.range.lowerBound), bytes: String(records.reduce(0) { $0 + $1.range.count }),
            url: url.absoluteString, reason: reason, time: RFC3339.string(from: Date()),
            status: answer.map { String($0.statusCode) }, answer: answer.map { String($0.bodyText.prefix(2000)) },
            records: records.map { RecordsFile.Record(offset: $0.range.lowerBound, bytes: $0.range.count, reason: $0.reason) })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        try AtomicFile.replace(at: name + ".json", with: Array(try encoder.encode(file)) + [0x0A], throwing: StreamUpError.self)
        return bodyFile
    }
}
