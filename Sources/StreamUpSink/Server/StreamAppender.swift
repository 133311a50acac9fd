import StreamUpHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A resumable upload's live writer into a de-duplicated stream (see ``StreamStore``): the
/// upload's byte `k` is the stream's byte `base + k`. Each piece is merged under the stream's
/// lock as it arrives, exactly like a complete plain-mode body: bytes below the stream file's
/// length are dropped, the rest appended, so plain requests and uploads of one stream
/// interleave without corrupting it.
///
/// Owns a write descriptor on the stream file while the upload's request appends: opened in
/// ``open(_:streamID:base:)`` (for the creating request) and ``reopen()``, closed in ``close()``
/// (or `deinit`), so an idle upload holds no descriptor.
///
/// Thread safety: not Sendable; owned by one ``ResumableUpload`` and used under its lock.
final class StreamAppender {
    /// The stream's id as the client sent it.
    let streamID: String
    /// The stream offset of the upload's first byte.
    let base: Int
    let path: String
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
        let descriptor = try StreamAppender.openFile(entry.path)
        let appender = StreamAppender(streamID: streamID, base: base, entry: entry, descriptor: descriptor)
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

    private init(streamID: String, base: Int, entry: StreamStore.Entry, descriptor: CInt) {
        self.streamID = streamID
        self.base = base
        self.entry = entry
        self.descriptor = descriptor
        path = entry.path
    }

    deinit {
        close()
    }

    /// The stream file's current length.
    func length() throws(SinkError) -> Int {
        try entry.length.withLock { (length: inout Int?) throws(SinkError) -> Int in
            try currentLength(&length)
        }
    }

    /// Merges `bytes`, the upload's bytes from `uploadOffset` on, into the stream.
    /// - Returns: the stream file's length afterwards.
    @discardableResult
    func append(_ bytes: UnsafeRawBufferPointer, uploadOffset: Int) throws(SinkError) -> Int {
        precondition(descriptor >= 0, "append after close")
        let offset = base + uploadOffset
        return try entry.length.withLock { (length: inout Int?) throws(SinkError) -> Int in
            let current = try currentLength(&length)
            guard offset <= current else {
                // Cannot happen while only the sink writes the file: the upload's earlier bytes
                // are all in it.
                throw SinkError(.storage, operation: "append", detail: "\(path): stream is \(counted(Int(current), "byte")), upload piece starts at \(offset)")
            }
            let end = offset + bytes.count
            guard end > current else { return current }
            let fresh = UnsafeRawBufferPointer(rebasing: bytes[(current - offset)...])
            do throws(SinkError) {
                try write(fresh, at: current)
            } catch {
                _ = ftruncate(descriptor, off_t(current))
                throw error
            }
            length = end
            return end
        }
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

    /// The cached length, or the file's size (cached from now on); call under the stream's lock.
    private func currentLength(_ length: inout Int?) throws(SinkError) -> Int {
        if let length { return length }
        let fd = descriptor
        guard fd >= 0 else {
            throw SinkError(.storage, operation: "lseek", detail: "\(path): the stream file is not open")
        }
        let size: Int
        do {
            size = Int(try SystemCall.runBlocking("lseek") { lseek(fd, 0, SEEK_END) })
        } catch {
            throw SinkError(.storage, operation: "lseek", errno: error.errno, detail: path)
        }
        length = size
        return size
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
