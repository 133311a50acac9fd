import StreamUp
import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A regular file the follower reads: opened read-only and close-on-exec, read with `pread(2)`
/// at offsets the caller keeps.
///
/// Owns its descriptor from ``open(_:)`` on and closes it exactly once, in `deinit`. Reading at
/// explicit offsets keeps the follower's offset the only position there is, so truncation and
/// restarts never have to agree with a kernel file position.
///
/// Thread safety: not `Sendable`; confined to the follower's thread.
final class ReadOnlyFile {
    /// The open descriptor; valid until the object goes away.
    let descriptor: CInt
    /// The file's identity, from `fstat(2)` right after opening.
    let identity: FileIdentity
    /// The path it was opened by (the file may have been renamed since).
    let openedPath: String

    private init(descriptor: CInt, identity: FileIdentity, openedPath: String) {
        self.descriptor = descriptor
        self.identity = identity
        self.openedPath = openedPath
    }

    deinit {
        SystemCall.close(descriptor)
    }

    /// Opens `path` (`open(2)` with `O_RDONLY | O_CLOEXEC | O_NONBLOCK`, so a FIFO cannot block
    /// the open; on Linux also `O_NOATIME` where the file is ours, see ``noAccessTime``). Returns nil when nothing is there (ENOENT, ENOTDIR); throws ``StreamUpError``
    /// for any other failure and, with `.invalidConfiguration`, when the path is not a regular
    /// file.
    static func open(_ path: String) throws(StreamUpError) -> ReadOnlyFile? {
        let flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK
        var fd = SystemCall.retryingInterrupts { Self.systemOpen(path, flags | noAccessTime) }
        // O_NOATIME is refused (EPERM) for a file of another user, unless privileged.
        if fd < 0 && errno == EPERM && noAccessTime != 0 {
            fd = SystemCall.retryingInterrupts { Self.systemOpen(path, flags) }
        }
        if fd < 0 {
            let failure = errno
            if failure == ENOENT || failure == ENOTDIR { return nil }
            throw StreamUpError(.io, "open \(path) failed", errno: failure)
        }
        let status: FileStatus
        do {
            status = try FileStatus.of(descriptor: fd, throwing: StreamUpError.self)
        } catch {
            SystemCall.close(fd)
            throw error
        }
        guard status.isRegularFile else {
            SystemCall.close(fd)
            throw StreamUpError(.invalidConfiguration, "\(path) is not a regular file")
        }
        return ReadOnlyFile(descriptor: fd, identity: status.identity, openedPath: path)
    }

    /// `fstat(2)` of the open file (its size now, whatever name it has).
    func status() throws(StreamUpError) -> FileStatus {
        try FileStatus.of(descriptor: descriptor, throwing: StreamUpError.self)
    }

    /// One `pread(2)` into `space` at `offset`, retried on EINTR. Returns the count read, 0 at
    /// the end of the file.
    func read(into space: UnsafeMutableRawBufferPointer, at offset: Int64) throws(StreamUpError) -> Int {
        let fd = descriptor
        return try SystemCall.runBlocking("read from \(openedPath) failed") {
            pread(fd, space.baseAddress, space.count, off_t(offset))
        }
    }

    /// `O_NOATIME` on Linux (0 elsewhere): reads leave the file's access time alone. A log being
    /// written has a modification time newer than its access time, so under `relatime` every
    /// read would otherwise write the inode (ext4 journals it: about a tenth of the tailer's CPU
    /// following 100 files written 100 times a second each).
    #if os(Linux)
    static let noAccessTime: CInt = 0o1_000_000  // Glibc's module does not export the GNU flag
    #else
    static let noAccessTime: CInt = 0
    #endif

    private static func systemOpen(_ path: String, _ flags: CInt) -> CInt {
        #if canImport(Glibc)
        Glibc.open(path, flags)
        #else
        Darwin.open(path, flags)
        #endif
    }
}

@available(*, unavailable, message: "confined to the follower's thread")
extension ReadOnlyFile: Sendable {}
