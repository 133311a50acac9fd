import StreamUpSystem

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
        // A descriptor that is not open is the caller's mistake, not a bug in the funnel's sense
        // (EBADF traps there): say so before reading.
        guard fcntl(fd, F_GETFD) >= 0 else {
            throw StreamUpError(.io, "file descriptor \(fd) is not open", errno: errno)
        }
        // A 1 MiB pipe buffer: one read(2) takes up to that much instead of 64 KiB.
        PipeCapacity.enlarge(fd, to: 1 << 20)
        try await writer.runBlocking { blocking in
            while true {
                let count = try blocking.fill(maxLength: readSize) { space in
                    try Self.read(fd, into: space)
                }
                if count == 0 { return }
            }
        }
    }

    /// One `read(2)` through the system-call funnel; on a non-blocking descriptor it waits
    /// with `poll(2)` while there is nothing to read.
    static func read(_ fd: Int32, into space: UnsafeMutableRawBufferPointer) throws(StreamUpError) -> Int {
        while true {
            let outcome = try SystemCall.run("read from file descriptor \(fd) failed") {
                #if canImport(Glibc)
                return Glibc.read(fd, space.baseAddress, space.count)
                #else
                return Darwin.read(fd, space.baseAddress, space.count)
                #endif
            }
            switch outcome {
            case .done(let count):
                return count
            case .wouldBlock:
                var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                _ = poll(&descriptor, 1, -1)
            }
        }
    }
}
