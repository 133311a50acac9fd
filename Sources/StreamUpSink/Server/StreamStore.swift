import Foundation
import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// De-duplicated streams for at-least-once senders: requests carrying
/// `Streamup-Stream-Id: ID` and `Streamup-Offset: N` (the absolute offset of the body's first
/// byte in the stream) are merged into one file per stream, `stream-SAFEID.body` in the output
/// directory, so that the file always equals the stream's first `length` bytes: its contiguous
/// prefix, never a byte past a gap.
///
/// Bodies may come in any order (a sender with several segments in flight). A complete body,
/// already written to its own file `NAME.body`, is renamed to `stream-SAFEID.OFFSET-END.NAME.aside`
/// (the stream's bytes `OFFSET..<END`; `NAME` keeps every piece's file its own) and then: bytes before the stream file's length are duplicates and
/// dropped; a body that reaches past the length is joined (its new bytes appended) when it starts
/// at or before it, else held aside under that name and answered as held. When a body fills the
/// gap before held pieces, they join at once, in offset order, overlaps and resends dropped by
/// offset. A piece is held in the same sense as any stored body: written (no `fsync`) and renamed
/// before the answer, so it survives a restart of the sink; a restarted sink finds the `.aside`
/// files and holds them again. Holding is bounded per stream (``SinkConfiguration/maxStreamBytesAside``,
/// ``SinkConfiguration/maxStreamPiecesAside``): past that a body beyond the end is refused (`503`),
/// never one that the file can take now, so the sender's oldest segment always gets through.
///
/// Resumable uploads bound to a stream write live (see ``StreamAppender``) and must start at or
/// before the end; a failed write truncates the stream file back to its previous length. `SAFEID`
/// is the id with each byte outside `A–Z a–z 0–9 - _` written `%XX` (``fileName(forStreamID:)``):
/// each id its own file, an id too long for a file name refused. A stream file left by an earlier run is continued
/// from its length. Stream files are opened with `O_NOFOLLOW`: a symbolic link planted under a
/// stream file's name is refused (`ELOOP`, answered 500), never followed.
///
/// Thread safety: the entry table is guarded by a mutex. Each stream has two: its state mutex
/// (``StreamState``: length, pieces held, who joins), held only to decide, never across file I/O,
/// so holding a piece aside never waits for another connection's copy; and its file mutex, held by
/// whoever writes the stream file (the joiner for one copy, a resumable upload for one piece), so
/// writers of one file take turns and only they wait for each other. Order: file, then state.
/// Different streams don't wait for each other; callable from any thread.
final class StreamStore: Sendable {
    /// What merging one body into its stream did.
    enum Outcome: Equatable {
        /// The body's bytes are in the stream file (some or all were there already); `length` is
        /// the stream file's length.
        case appended(length: Int)
        /// The body starts past the stream file's end and is held aside until the gap fills;
        /// `length` is the stream file's length.
        case heldAside(length: Int)
        /// The body starts past the end and was not kept (``StreamState/Refusal`` says why);
        /// `length` is the stream file's length.
        case refused(StreamState.Refusal, length: Int)
    }

    /// One stream's files and state.
    ///
    /// Thread safety: `state` is the stream's state mutex (never held across I/O); `file` is held
    /// by whoever writes the stream file. Callable from any thread.
    final class Entry: Sendable {
        let path: String
        /// `stream-SAFEID` in the output directory: the prefix of the stream's `.aside` files.
        let stem: String
        /// `nil` until first used in this run (then the file's size).
        let state: Mutex<StreamState?>
        let file = Mutex<Void>(())
        /// Pieces found on disk when the store opened, held once the state is loaded.
        private let restored: [StreamState.Piece]

        init(path: String, stem: String, restored: [StreamState.Piece]) {
            self.path = path
            self.stem = stem
            self.restored = restored
            state = Mutex(nil)
        }

        /// The name a piece holding the stream's bytes `offset..<end` is kept under; `token` (the
        /// body file's name, without `.body`) makes it the piece's own.
        func asidePath(offset: Int, end: Int, token: String) -> String {
            "\(stem).\(offset)-\(end).\(token).aside"
        }

        /// Runs `body` on the loaded state: on first use the stream file's size (`stat(2)`, done
        /// outside the lock; a racing loader's value is dropped, and the file is written only
        /// once the state is loaded, so both read the same size).
        func withState<Result>(_ body: (inout StreamState) -> Result) throws(SinkError) -> Result {
            if state.withLock({ $0 == nil }) {
                let size = try Entry.size(of: path)
                let restored = restored
                state.withLock { loaded in
                    if loaded == nil {
                        loaded = StreamState(length: size, pieces: restored)
                    }
                }
            }
            return state.withLock { loaded in
                body(&loaded!)
            }
        }

        /// Whether the entry holds nothing it could not make again from the file: no piece
        /// aside, nobody joining (state loaded or not).
        var isIdle: Bool {
            restored.isEmpty ? state.withLock { $0?.isIdle ?? true } : state.withLock { $0?.isIdle ?? false }
        }

        /// The size of the file at `path` (`lstat(2)`); 0 when it does not exist.
        /// - Throws: `ELOOP` for a symbolic link, as opening it would: never followed.
        private static func size(of path: String) throws(SinkError) -> Int {
            var status = stat()
            guard lstat(path, &status) == 0 else {
                let code = errno
                if code == ENOENT { return 0 }
                throw SinkError(.storage, operation: "lstat", errno: code, detail: path)
            }
            guard status.st_mode & S_IFMT != S_IFLNK else {
                throw SinkError(.storage, operation: "open", errno: ELOOP, detail: path)
            }
            return Int(status.st_size)
        }
    }

    let directory: String
    let limits: StreamState.Limits
    /// An entry and how many merges and uploads use it now (``entry(forStreamID:)`` to
    /// ``release(_:)``).
    ///
    /// Thread safety: a value type, kept in the `entries` table.
    private struct Slot {
        let entry: Entry
        var users: Int
    }

    /// By stream file path, the entries in use or holding pieces: an idle one is let go when its
    /// last user leaves, so the table does not grow with every stream the sink has seen.
    private let entries = Mutex<[String: Slot]>([:])
    /// Pieces found on disk at start, by stream file path; moved into each entry on first use.
    private let restored: Mutex<[String: [StreamState.Piece]]>
    /// What the whole sink holds aside (pieces found at start included); taken inside a stream's
    /// state mutex, never the other way round.
    private let totals: Mutex<StreamState.Totals>

    init(directory: String, limits: StreamState.Limits) {
        self.directory = directory
        self.limits = limits
        let found = StreamStore.heldPieces(in: directory)
        var totals = StreamState.Totals()
        for piece in found.values.joined() { totals.add(piece) }
        restored = Mutex(found)
        self.totals = Mutex(totals)
    }

    /// What the whole sink holds aside now.
    var heldAside: StreamState.Totals {
        totals.withLock { $0 }
    }

    /// How many streams' entries are kept now (in use, or holding pieces).
    var entryCount: Int {
        entries.withLock { $0.count }
    }

    /// Runs `body` on `entry`'s loaded state and the sink's totals, under both mutexes.
    func withState<Result>(of entry: Entry, _ body: (inout StreamState, inout StreamState.Totals) -> Result) throws(SinkError) -> Result {
        try entry.withState { state in totals.withLock { body(&state, &$0) } }
    }

    /// The longest id as written in a file name (``fileName(forStreamID:)``): its pieces' names
    /// add at most 90 characters, within the 255 a file name may have.
    static let maxWrittenIDLength = 128

    /// `stream-ID.body`, the id written so that every id has a name of its own: each UTF-8 byte
    /// outside `A–Z a–z 0–9 - _` becomes `%XX` (upper-case hex), `%` itself included, so `p/q`,
    /// `p q` and `p%2Fq` are `p%2Fq`, `p%20q` and `p%252Fq`, and the name gives the id back.
    /// `nil` for an empty id, and one longer than ``maxWrittenIDLength`` once written: refused,
    /// never cut into another id's name.
    static func fileName(forStreamID id: String) -> String? {
        guard !id.isEmpty else { return nil }
        var written = ""
        for byte in id.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"):
                written.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                written += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
            if written.utf8.count > maxWrittenIDLength { return nil }
        }
        return "stream-\(written).body"
    }

    /// The path of the stream file for `id` (which must have a ``fileName(forStreamID:)``).
    func path(forStreamID id: String) -> String {
        "\(directory)/\(StreamStore.fileName(forStreamID: id) ?? "stream-.body")"
    }

    /// Merges the complete body in `bodyPath` (`bodyLength` bytes, starting at stream offset
    /// `offset`) into the stream `id`; the body's file is gone afterwards (joined, held under its
    /// `.aside` name, or removed), unless this throws before it was renamed.
    ///
    /// - Throws: a storage error: renaming the body, or copying it (or a held piece it let join)
    ///   into the stream file; pieces held stay held for the next request of the stream.
    func merge(streamID id: String, offset: Int, bodyPath: String, bodyLength: Int) throws(SinkError) -> Outcome {
        let entry = entry(forStreamID: id)
        defer { release(entry) }
        let token = String((bodyPath.split(separator: "/").last ?? "body").prefix { $0 != "." })
        let piece = StreamState.Piece(
            offset: offset, end: offset + bodyLength, path: entry.asidePath(offset: offset, end: offset + bodyLength, token: token))
        if bodyLength == 0 {
            _ = unlink(bodyPath)
            return .appended(length: try entry.withState { $0.length })
        }
        do {
            _ = try SystemCall.runBlocking("rename") { rename(bodyPath, piece.path) }
        } catch {
            throw SinkError(.storage, operation: "rename", errno: error.errno, detail: piece.path)
        }
        let registration: StreamState.Registration
        do {
            registration = try withState(of: entry) { $0.register(piece, limits: limits, sink: &$1) }
        } catch {
            _ = unlink(piece.path)
            throw error
        }
        let join: Bool
        switch registration {
        case .duplicate(let claimed):
            _ = unlink(piece.path)
            join = claimed
        case .refused(let refusal):
            _ = unlink(piece.path)
            return .refused(refusal, length: try entry.withState { $0.length })
        case .held(let claimed):
            join = claimed
        }
        let length = join ? try self.join(entry) : try entry.withState { $0.length }
        return length >= piece.end ? .appended(length: length) : .heldAside(length: length)
    }

    /// Joins held pieces into the stream file while one can join; the caller holds the joiner's
    /// turn (``StreamState/register(_:limits:sink:)`` or ``StreamState/claimJoinIfUseful()`` said
    /// so) and gives it up here, also when it throws.
    /// - Returns: the stream file's length afterwards.
    func join(_ entry: Entry) throws(SinkError) -> Int {
        let output: CInt
        do {
            output = try SystemCall.runBlocking("open") { open(entry.path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644) }
        } catch {
            _ = try? entry.withState { $0.joinFailed() }
            throw SinkError(.storage, operation: "open", errno: error.errno, detail: entry.path)
        }
        defer { _ = close(output) }
        while true {
            // One copy per turn of the file mutex, so a resumable upload's piece can go between.
            let step = try entry.file.withLock { (_: inout Void) throws(SinkError) -> StreamState.JoinStep in
                let step = try withState(of: entry) { $0.nextJoin(sink: &$1) }
                guard case .copy(let piece, let from, _) = step else { return step }
                do throws(SinkError) {
                    let copied = try StreamStore.copy(from: piece.path, skipping: from - piece.offset, to: output, at: from, path: entry.path)
                    guard copied == piece.end - from else {
                        throw SinkError(
                            .storage, operation: "pread",
                            detail:
                                "\(piece.path) holds \(copied) bytes past offset \(from), its name says \(piece.end - from): it was changed behind the sink's back"
                        )
                    }
                } catch {
                    _ = ftruncate(output, off_t(from))
                    _ = try? entry.withState { $0.joinFailed() }
                    throw error
                }
                try withState(of: entry) { $0.joined(piece, sink: &$1) }
                _ = unlink(piece.path)
                return step
            }
            switch step {
            case .copy(_, _, let stale):
                stale.forEach { _ = unlink($0.path) }
            case .done(let length, let stale):
                stale.forEach { _ = unlink($0.path) }
                return length
            }
        }
    }

    /// The entry of stream `id`, created on first use, for one more user: give it back with
    /// ``release(_:)``.
    func entry(forStreamID id: String) -> Entry {
        let path = path(forStreamID: id)
        return entries.withLock { table in
            if table[path] != nil {
                table[path]!.users += 1
                return table[path]!.entry
            }
            let pieces = restored.withLock { $0.removeValue(forKey: path) } ?? []
            let created = Entry(path: path, stem: String(path.dropLast(".body".count)), restored: pieces)
            table[path] = Slot(entry: created, users: 1)
            return created
        }
    }

    /// One user of `entry` is done with it; the last one lets an idle entry go (the next use
    /// makes it again from the file). Under the table mutex, so no second entry of the stream is
    /// made meanwhile.
    func release(_ entry: Entry) {
        entries.withLock { table in
            guard var slot = table[entry.path], slot.entry === entry else { preconditionFailure("released an entry not in use: \(entry.path)") }
            slot.users -= 1
            if slot.users == 0 && entry.isIdle {
                table.removeValue(forKey: entry.path)
            } else {
                table[entry.path] = slot
            }
        }
    }

    /// The `.aside` pieces an earlier run left in `directory`, by stream file path.
    static func heldPieces(in directory: String) -> [String: [StreamState.Piece]] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var pieces: [String: [StreamState.Piece]] = [:]
        for name in names {
            guard let (stream, offset, end, _) = asideName(name) else { continue }
            pieces["\(directory)/\(stream).body", default: []].append(
                StreamState.Piece(offset: offset, end: end, path: "\(directory)/\(name)"))
        }
        return pieces
    }

    /// `("stream-SAFEID", OFFSET, END, the sequence NAME starts with)` for
    /// `stream-SAFEID.OFFSET-END.NAME.aside`.
    static func asideName(_ name: String) -> (stream: String, offset: Int, end: Int, sequence: Int?)? {
        guard name.hasPrefix("stream-"), name.hasSuffix(".aside") else { return nil }
        let parts = name.dropLast(".aside".count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[2].isEmpty else { return nil }
        let range = parts[1].split(separator: "-", omittingEmptySubsequences: false)
        guard range.count == 2, range.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let offset = Int(range[0]), let end = Int(range[1]), offset < end
        else { return nil }
        return (String(parts[0]), offset, end, BodyStorage.sequence(inFileName: String(parts[2])))
    }

    /// Copies `source` from byte `skip` to its end onto `output` starting at `position`.
    /// - Returns: how many bytes were copied.
    private static func copy(
        from source: String, skipping skip: Int, to output: CInt, at position: Int, path: String
    ) throws(SinkError) -> Int {
        let input: CInt
        do {
            input = try SystemCall.runBlocking("open") { open(source, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
        } catch {
            throw SinkError(.storage, operation: "open", errno: error.errno, detail: source)
        }
        defer { _ = close(input) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
        defer { buffer.deallocate() }
        guard let base = buffer.baseAddress else { return 0 }
        var readOffset = skip
        var writeOffset = position
        while true {
            let count: Int
            do {
                count = try SystemCall.runBlocking("pread") { pread(input, base, buffer.count, off_t(readOffset)) }
            } catch {
                throw SinkError(.storage, operation: "pread", errno: error.errno, detail: source)
            }
            guard count > 0 else { return writeOffset - position }
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
