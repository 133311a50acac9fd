import Foundation
import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where segments go that the server refused for good, or that ran out of retries
/// (`--dead-letter DIR`), so the stream can go on without losing them. Each gets two files,
/// named by stream and offset:
/// - `STREAM-OFFSET.body`: the records exactly as they were in the stream (send them again with
///   `streamup URL < FILE` once the cause is fixed);
/// - `STREAM-OFFSET.json`: when, where to, why, and the start of the server's answer.
/// Both are `fsync`ed before the records leave the buffer.
///
/// Thread safety: used by one uploader's delivery task only.
struct DeadLetterStore: Sendable {
    let directory: String

    /// Writes the bytes `range` of `buffer` and their record; returns the body file's path.
    func keep(_ range: Range<Int>, of buffer: ReplayBuffer, streamID: String, url: URL, reason: String, answer: UploadResponse?) throws -> String {
        let name = try writeBody([range], of: buffer, streamID: streamID)
        var record: [String: String] = [
            "stream": streamID, "offset": String(range.lowerBound), "bytes": String(range.count),
            "url": Self.shown(url), "reason": SecretRedaction.redactingURLs(in: reason), "time": RFC3339.string(from: Date()),
        ]
        if let answer {
            record["status"] = String(answer.statusCode)
            record["answer"] = SecretRedaction.redactingURLs(in: String(answer.bodyText.prefix(2000)))
        }
        try writeRecord(record, name: name)
        return name + ".body"
    }

    /// Creates the directory if need be and writes the bytes `ranges` of `buffer`, in order, to
    /// `STREAM-OFFSET.body` (the first range's offset), `fsync`ed; returns `DIR/STREAM-OFFSET`.
    func writeBody(_ ranges: [Range<Int>], of buffer: ReplayBuffer, streamID: String) throws -> String {
        guard let first = ranges.first else { preconditionFailure("nothing to keep") }
        try PrivateDirectory.make(directory, "cannot create the dead-letter directory \(directory)")
        let name = "\(directory)/\(streamID)-\(String(format: "%020d", first.lowerBound))"
        let bodyFile = name + ".body"
        let descriptor = try SystemCall.runBlocking("cannot create \(bodyFile)") {
            SystemCall.open(bodyFile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o600)
        }
        defer { SystemCall.close(descriptor) }
        _ = fchmod(descriptor, 0o600)  // whatever the umask, and a file from before
        for range in ranges {
            try buffer.copy(range) { piece in
                try SystemCall.writeAll(descriptor, piece, "cannot write \(bodyFile)")
            }
        }
        try SystemCall.runBlocking("cannot sync \(bodyFile)") { fsync(descriptor) }
        return name
    }

    /// The URL as `-v` shows it: no password, no credential query values (`token`, `api_key`,
    /// `sig`, ...): a dead letter is a file anyone with the directory can read.
    static func shown(_ url: URL) -> String {
        SecretRedaction.redactingURLs(in: url.absoluteString)
    }

    /// Writes `record` as `NAME.json` (sorted keys, one line), atomically.
    func writeRecord(_ record: some Encodable, name: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        try AtomicFile.replace(at: name + ".json", with: Array(try encoder.encode(record)) + [0x0A], throwing: StreamUpError.self)
    }
}
