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
/// writes to it is slowed down: memory stays flat. Reads run on a thread of their own, which
/// waits in `poll(2)` for input or for its wake pipe: a cancel (a stop, a signal, the upload
/// failing) ends it at once, even while the input is open and quiet. It takes its turn on the
/// writer only once input is there, so other writers on the same writer never wait for input.
///
/// Thread safety: immutable; its reading loop runs on one dedicated thread, which the task's
/// cancellation wakes through a `WakePipe`.
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
        let wake = try WakePipe("cannot create the reader's wake-up pipe", throwing: StreamUpError.self)
        // The reading thread has finished once `runBlocking` returns: nobody polls the pipe.
        defer { wake.close() }
        try await withTaskCancellationHandler {
            try await writer.runBlocking { blocking in
                while true {
                    try Self.waitForInput(fd, wake: wake)
                    var wouldBlock = false
                    let count = try blocking.fill(maxLength: readSize) { space in
                        guard let count = try Self.read(fd, into: space) else {
                            wouldBlock = true
                            return 0
                        }
                        return count
                    }
                    if count == 0 && !wouldBlock { return }
                }
            }
        } onCancel: {
            wake.signal()
        }
    }

    /// Blocks until `fd` has input (or its end, or an error `read(2)` will report), or `wake`
    /// fires (throws `CancellationError`).
    static func waitForInput(_ fd: Int32, wake: WakePipe) throws(CancellationError) {
        var descriptors = [
            pollfd(fd: wake.readEnd, events: Int16(POLLIN), revents: 0), pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            try wake.checkCancelled()
            let ready = poll(&descriptors, 2, -1)
            if ready < 0 && errno == EINTR { continue }
            try wake.checkCancelled()
            // A failed poll is left to the read, which says what is wrong with the descriptor.
            if ready < 0 || descriptors[1].revents != 0 { return }
        }
    }

    /// One `read(2)` through the system-call funnel: the bytes read (0 at the end of input), or
    /// nil when a non-blocking descriptor has nothing to read after all.
    static func read(_ fd: Int32, into space: UnsafeMutableRawBufferPointer) throws(StreamUpError) -> Int? {
        let outcome = try SystemCall.run("read from file descriptor \(fd) failed") {
            #if canImport(Glibc)
            return Glibc.read(fd, space.baseAddress, space.count)
            #else
            return Darwin.read(fd, space.baseAddress, space.count)
            #endif
        }
        switch outcome {
        case .done(let count): return count
        case .wouldBlock: return nil
        }
    }
}
