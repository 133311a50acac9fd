import StreamUpHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A resumable upload's live writer into a de-duplicated stream (see ``StreamStore``): the
/// upload's byte `k` is the stream's byte `base + k`. Each piece is merged under the stream's
/// file mutex as it arrives, like a complete plain-mode body that starts at or before the end:
/// bytes below the stream file's length are dropped, the rest appended, and pieces held aside
/// that the upload reaches join after it; so plain requests and uploads of one stream interleave
/// without corrupting it. An upload never starts past the end (``StreamGap``): its bytes arrive
/// live and are not held aside.
///
/// Owns a write descriptor on the stream file while the upload's request appends: opened in
/// ``open(_:streamID:base:)`` (for the creating request) and ``reopen()``, closed in ``close()``
/// (or `deinit`), so an idle upload holds no descriptor. Uses the stream's entry in the store
/// from ``open(_:streamID:base:)`` until `deinit` (then released).
///
/// Thread safety: not Sendable; owned by one ``ResumableUpload`` and used under its lock.
final class StreamAppender {
    /// The stream's id as the client sent it.
    let streamID: String
    /// The stream offset of the upload's first byte.
    let base: Int
    let path: String
    private let store: StreamStore
    private let entry: StreamStore.Entry
    private var descriptor: CInt

    /// Opens stream `id` for an upload starting at stream offset `base`.
    ///
    /// - Returns: `.gap(expectedOffset:)` instead of an appender when `base` is past the end of
    ///   the stream (nothing is opened then).
    static func open(
        _ streams: StreamStore, streamID: String, base: Int
    ) throws(SinkError) -> Result<StreamAppender, StreamGap> {
        let entry = streams.entry(forStreamID: streamID)
        let descriptor: CInt
        do {
            descriptor = try StreamAppender.openFile(entry.path)
        } catch {
            streams.release(entry)
            throw error
        }
        let appender = StreamAppender(streamID: streamID, base: base, store: streams, entry: entry, descriptor: descriptor)
        let length: Int
        do {
            length = try appender.length()
        } catch {
            appender.close()
            throw error
        }
        guard base <= length else {
            appender.close()
            return .failure(StreamGap(expectedOffset: length))
        }
        return .success(appender)
    }

    private init(streamID: String, base: Int, store: StreamStore, entry: StreamStore.Entry, descriptor: CInt) {
        self.streamID = streamID
        self.base = base
        self.store = store
        self.entry = entry
        self.descriptor = descriptor
        path = entry.path
    }

    deinit {
        close()
        store.release(entry)
    }

    /// The stream file's current length.
    func length() throws(SinkError) -> Int {
        try entry.withState { $0.length }
    }

    /// Merges `bytes`, the upload's bytes from `uploadOffset` on, into the stream, under the
    /// stream's file mutex (writers of one stream file take turns); then joins the pieces held
    /// aside that these bytes reached.
    /// - Returns: the stream file's length afterwards.
    @discardableResult
    func append(_ bytes: UnsafeRawBufferPointer, uploadOffset: Int) throws(SinkError) -> Int {
        precondition(descriptor >= 0, "append after close")
        let offset = base + uploadOffset
        let join = try entry.file.withLock { (_: inout Void) throws(SinkError) -> Bool in
            let current = try entry.withState { $0.length }
            guard offset <= current else {
                // Cannot happen while only the sink writes the file: the upload's earlier bytes
                // are all in it.
                throw SinkError(.storage, operation: "append", detail: "\(path): stream is \(counted(Int(current), "byte")), upload piece starts at \(offset)")
            }
            let end = offset + bytes.count
            guard end > current else { return false }
            let fresh = UnsafeRawBufferPointer(rebasing: bytes[(current - offset)...])
            do throws(SinkError) {
                try write(fresh, at: current)
            } catch {
                _ = ftruncate(descriptor, off_t(current))
                throw error
            }
            return try entry.withState { state in
                state.appended(upTo: end)
                return state.claimJoinIfUseful()
            }
        }
        guard join else { return try length() }
        return try store.join(entry)
    }

    /// `open(2)` of the stream file for writing, creating it, never through a symbolic link.
    private static func openFile(_ path: String) throws(SinkError) -> CInt {
        do {
            return try SystemCall.runBlocking("open") { systemOpen(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644) }
        } catch {
            throw SinkError(.storage, operation: "open", errno: error.errno, detail: path)
        }
    }

    /// Whether the descriptor is open.
    var isOpen: Bool {
        descriptor >= 0
    }

    /// Opens the stream file again, for the next request appending to the upload.
    func reopen() throws(SinkError) {
        precondition(descriptor < 0, "reopen while open")
        descriptor = try StreamAppender.openFile(path)
    }

    /// Closes the descriptor until ``reopen()``; appends meanwhile are a bug. Safe to call more
    /// than once.
    func close() {
        guard descriptor >= 0 else { return }
        _ = systemClose(descriptor)
        descriptor = -1
    }

    /// `pwrite(2)` of all of `bytes` at `position`, looping over short writes.
    private func write(_ bytes: UnsafeRawBufferPointer, at position: Int) throws(SinkError) {
        guard let base = bytes.baseAddress else { return }
        let fd = descriptor
        var written = 0
        while written < bytes.count {
            let chunk = base + written
            let remaining = bytes.count - written
            let at = off_t(position + written)
            do {
                written += try SystemCall.runBlocking("pwrite") { pwrite(fd, chunk, remaining, at) }
            } catch {
                throw SinkError(.storage, operation: "pwrite", errno: error.errno, detail: path)
            }
        }
    }
}

@available(*, unavailable)
extension StreamAppender: Sendable {}

/// An upload bound to a stream would start past the stream's end.
///
/// Thread safety: a value type.
struct StreamGap: Error, Hashable {
    /// The stream's length: the highest offset an upload may start at.
    let expectedOffset: Int
}

// The C functions under names that don't clash with the methods above.
@inline(__always) private func systemOpen(_ path: String, _ flags: CInt, _ mode: mode_t) -> CInt {
    open(path, flags, mode)
}

@inline(__always) private func systemClose(_ fd: CInt) -> CInt {
    close(fd)
}
