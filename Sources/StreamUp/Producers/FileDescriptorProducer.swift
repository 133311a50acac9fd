#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Streams everything read from a file descriptor (stdin, a pipe, a socket, a file) until end
/// of input.
///
/// It reads only when the buffer has space, and straight into the buffer: no copy, no
/// allocation per read. While the upload is slow, reads stop, the pipe fills up, and whoever
/// writes to it is slowed down: memory stays flat. Reads run on a thread of their own, since
/// `read(2)` on a pipe blocks; a cancelled producer stops at its next read.
///
/// Thread safety: immutable; its reading loop runs on one dedicated thread.
public struct FileDescriptorProducer: Producer {
    /// The descriptor read from; it is not closed.
    public let fileDescriptor: Int32
    /// The most bytes asked for per `read(2)`.
    public let readSize: Int

    /// Creates a producer for `fileDescriptor` (0 for stdin).
    public init(fileDescriptor: Int32, readSize: Int = 256 * 1024) {
        self.fileDescriptor = fileDescriptor
        self.readSize = readSize
    }

    public func produce(into writer: StreamWriter) async throws {
        let fd = fileDescriptor
        let readSize = readSize
        Self.enlargePipe(fd)
        try await writer.runBlocking { blocking in
            while true {
                let count = try blocking.fill(maxLength: readSize) { space in
                    try Self.read(fd, into: space)
                }
                if count == 0 { return }
            }
        }
    }

    /// Asks Linux for a 1 MiB pipe buffer when `fd` is a pipe, so one `read(2)` can take up to
    /// that much instead of 64 KiB: fewer system calls and wake-ups per byte. A fixed amount of
    /// kernel memory; refused requests (over `/proc/sys/fs/pipe-max-size`) are fine.
    static func enlargePipe(_ fd: Int32) {
        #if os(Linux)
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFIFO else { return }
        let setPipeSize: Int32 = 1031  // F_SETPIPE_SZ, which Glibc's Swift module does not export
        _ = fcntl(fd, setPipeSize, 1 << 20)
        #endif
    }

    /// One `read(2)`, retried on EINTR; on a non-blocking descriptor it waits with `poll(2)`.
    static func read(_ fd: Int32, into space: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            #if canImport(Glibc)
            let count = Glibc.read(fd, space.baseAddress, space.count)
            #else
            let count = Darwin.read(fd, space.baseAddress, space.count)
            #endif
            if count >= 0 { return count }
            switch errno {
            case EINTR:
                continue
            case EAGAIN, EWOULDBLOCK:
                var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                _ = poll(&descriptor, 1, -1)
            default:
                throw StreamUpError(.io, "read from file descriptor \(fd) failed", errno: errno)
            }
        }
    }
}
