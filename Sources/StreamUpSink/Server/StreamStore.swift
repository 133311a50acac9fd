import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// De-duplicated streams for at-least-once senders: requests carrying
/// `Streamup-Stream-Id: ID` and `Streamup-Offset: N` (the absolute offset of the body's first
/// byte in the stream) are merged into one file per stream, `stream-SAFEID.body` in the output
/// directory, so that the file always equals the stream's first `length` bytes.
///
/// Applied to complete bodies, after they were written to their own `.partial` file, and live
/// to the bytes of resumable uploads bound to a stream (see ``StreamAppender``): bytes before
/// the stream file's current length are duplicates and dropped, the rest is appended; an offset
/// past the current length is a gap and nothing is written. A failed write truncates the
/// stream file back to its previous length. `SAFEID` is the id with anything
/// outside `A–Z a–z 0–9 - _` replaced by `_` (at most 128 characters); ids that map to the same
/// name share one stream. A stream file left by an earlier run is continued from its length.
/// Stream files are opened with `O_NOFOLLOW`: a symbolic link planted under a stream file's name
/// is refused (`ELOOP`, answered 500), never followed.
///
/// Thread safety: the entry table is guarded by a mutex, and each stream by its own mutex held
/// for the whole append (a whole body, or one piece of a live upload), so writers of one stream
/// serialise, every append sees the length the previous one left, and different streams don't
/// wait for each other; callable from any thread.
final class StreamStore: Sendable {
    /// What merging one body into its stream did.
    enum Outcome: Equatable {
        /// The new bytes (possibly none) were appended; `length` is the stream file's new length.
        case appended(length: Int)
        /// The body starts past the end of the stream; nothing was written.
        case gap(expectedOffset: Int)
    }

    /// One stream's file and length (`nil` until first used in this run).
    ///
    /// Thread safety: `length` is the stream's mutex; hold it to write the file.
    final class Entry: Sendable {
        let path: String
        let length = Mutex<Int?>(nil)

        init(path: String) {
            self.path = path
        }
    }

    let directory: String
    private let entries = Mutex<[String: Entry]>([:])

    init(directory: String) {
        self.directory = directory
    }

    /// `stream-SAFEID.body`, or `nil` for an empty id.
    static func fileName(forStreamID id: String) -> String? {
        guard !id.isEmpty else { return nil }
        let safe = String(
            id.prefix(128).map { character -> Character in
                character.isASCII && (character.isLetter || character.isNumber || character == "-" || character == "_")
                    ? character : "_"
            })
        return "stream-\(safe).body"
    }

    /// The path of the stream file for `id` (which must have a ``fileName(forStreamID:)``).
    func path(forStreamID id: String) -> String {
        "\(directory)/\(StreamStore.fileName(forStreamID: id) ?? "stream-.body")"
    }

    /// Merges the complete body in `bodyPath` (`bodyLength` bytes, starting at stream offset
    /// `offset`) into the stream `id`.
    func merge(streamID id: String, offset: Int, bodyPath: String, bodyLength: Int) throws(SinkError) -> Outcome {
        let entry = entry(forStreamID: id)
        return try entry.length.withLock { (length: inout Int?) throws(SinkError) -> Outcome in
            try StreamStore.append(
                to: entry.path, length: &length, offset: offset, bodyPath: bodyPath, bodyLength: bodyLength)
        }
    }

    /// The entry of stream `id`, created on first use.
    func entry(forStreamID id: String) -> Entry {
        let path = path(forStreamID: id)
        return entries.withLock { table in
            if let existing = table[path] { return existing }
            let created = Entry(path: path)
            table[path] = created
            return created
        }
    }

    /// The merge itself, under the stream's lock; `length` is the stream's cached length.
    private static func append(
        to path: String, length: inout Int?, offset: Int, bodyPath: String, bodyLength: Int
    ) throws(SinkError) -> Outcome {
        let output: CInt
        do {
            output = try SystemCall.runBlocking("open") { open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644) }
        } catch {
            throw SinkError(.storage, operation: "open", errno: error.errno, detail: path)
        }
        defer { _ = close(output) }
        let current: Int
        if let length {
            current = length
        } else {
            do {
                current = Int(try SystemCall.runBlocking("lseek") { lseek(output, 0, SEEK_END) })
            } catch {
                throw SinkError(.storage, operation: "lseek", errno: error.errno, detail: path)
            }
            length = current
        }
        guard offset <= current else { return .gap(expectedOffset: current) }
        let end = offset + bodyLength
        guard end > current else { return .appended(length: current) }
        do {
            try StreamStore.copy(from: bodyPath, skipping: current - offset, to: output, at: current, path: path)
        } catch {
            _ = ftruncate(output, off_t(current))
            throw error
        }
        length = end
        return .appended(length: end)
    }

    /// Copies `source` from byte `skip` to its end onto `output` starting at `position`.
    private static func copy(
        from source: String, skipping skip: Int, to output: CInt, at position: Int, path: String
    ) throws(SinkError) {
        let input: CInt
        do {
            input = try SystemCall.runBlocking("open") { open(source, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
        } catch {
            throw SinkError(.storage, operation: "open", errno: error.errno, detail: source)
        }
        defer { _ = close(input) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
        defer { buffer.deallocate() }
        guard let base = buffer.baseAddress else { return }
        var readOffset = skip
        var writeOffset = position
        while true {
            let count: Int
            do {
                count = try SystemCall.runBlocking("pread") { pread(input, base, buffer.count, off_t(readOffset)) }
            } catch {
                throw SinkError(.storage, operation: "pread", errno: error.errno, detail: source)
            }
            guard count > 0 else { return }
            readOffset += count
            var written = 0
            while written < count {
                let chunk = base + written
                let remaining = count - written
                let at = off_t(writeOffset)
                do {
                    let step = try SystemCall.runBlocking("pwrite") { pwrite(output, chunk, remaining, at) }
                    written += step
                    writeOffset += step
                } catch {
                    throw SinkError(.storage, operation: "pwrite", errno: error.errno, detail: path)
                }
            }
        }
    }
}
