import Foundation
import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Streams everything read from a file descriptor (stdin, a pipe, a socket, a file) until end
/// of input, as it is or (with a `LineFormatting`, `package` init) as records made of its
/// lines.
///
/// As it is, it reads only when the buffer has space, and straight into the buffer: no copy, no
/// allocation per read. While the upload is slow, reads stop, the pipe fills up, and whoever
/// writes to it is slowed down: memory stays flat. Reads run on a thread of their own, which
/// waits in `poll(2)` for input or for its wake pipe: a cancel (a stop, a signal, the upload
/// failing) ends it at once, even while the input is open and quiet. It takes its turn on the
/// writer only once input is there, so other writers on the same writer never wait for input.
///
/// With a `LineFormatting`, the same thread cuts what it reads into lines and writes their
/// records (`LineRecords`), each whole, as the file tailer does with its files; it waits for
/// space while the buffer is full, so backpressure reaches the writer of the input. A line still
/// open at the end of input becomes a record; one still open when the producer is cancelled is
/// dropped. A multiline record held while no input comes goes out when its timeout passes (the
/// thread waits for input at most until then).
///
/// Thread safety: immutable; its reading loop runs on one dedicated thread, which the task's
/// cancellation wakes through a `WakePipe`.
public struct FileDescriptorProducer: Producer {
    /// The descriptor read from; it is not closed.
    public let fileDescriptor: Int32
    /// The most bytes asked for per `read(2)`.
    public let readSize: Int
    /// How lines become records (nil: the bytes go as they are).
    let formatting: LineFormatting?

    /// Creates a producer for `fileDescriptor` (0 for stdin).
    public init(fileDescriptor: Int32, readSize: Int = 256 * 1024) {
        self.init(fileDescriptor: fileDescriptor, readSize: readSize, formatting: nil)
    }

    /// Creates a producer of the records `formatting` makes of the lines read from
    /// `fileDescriptor`.
    package init(fileDescriptor: Int32, readSize: Int = 64 * 1024, formatting: LineFormatting?) {
        self.fileDescriptor = fileDescriptor
        self.readSize = readSize
        self.formatting = formatting
    }

    public func produce(into writer: StreamWriter) async throws {
        let fd = fileDescriptor
        let readSize = readSize
        let formatting = formatting
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
                if let formatting {
                    return try Self.formatLines(of: fd, readSize: readSize, formatting, wake: wake, into: blocking)
                }
                while true {
                    _ = try Self.waitForInput(fd, wake: wake)
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

    /// Reads `fd` to its end on the calling thread, writing the records `formatting` makes of
    /// its lines.
    private static func formatLines(
        of fd: Int32, readSize: Int, _ formatting: LineFormatting, wake: WakePipe, into blocking: BlockingStreamWriter
    ) throws {
        var lines = formatting.lineRecords()
        var chunk = [UInt8](repeating: 0, count: readSize)
        var position: Int64 = 0
        let clock = ContinuousClock()
        let origin = clock.now
        while true {
            // A multiline record held: wait for input only until it is due.
            guard try waitForInput(fd, wake: wake, until: lines.deadline.map { origin + $0 }) else {
                try write(lines.expire(at: clock.now - origin, readAt: Date()), into: blocking)
                continue
            }
            guard let count = try chunk.withUnsafeMutableBytes({ try read(fd, into: $0) }) else { continue }
            if count == 0 { break }
            let records = chunk.withUnsafeBytes {
                lines.take(UnsafeRawBufferPointer(rebasing: $0[..<count]), from: position, readAt: Date(), now: clock.now - origin)
            }
            position += Int64(count)
            try write(records, into: blocking)
        }
        try write(lines.flush(readAt: Date()), into: blocking)
    }

    /// Writes each record whole (a message the filter left out has no bytes: nothing).
    private static func write(_ records: [LineRecords.Record], into blocking: BlockingStreamWriter) throws {
        for record in records { try blocking.write(record.bytes, mark: nil) }
    }

    /// Blocks until `fd` has input (or its end, or an error `read(2)` will report: returns
    /// true), `deadline` passes (false; nil waits for ever), or `wake` fires (throws
    /// `CancellationError`).
    static func waitForInput(_ fd: Int32, wake: WakePipe, until deadline: ContinuousClock.Instant? = nil) throws(CancellationError) -> Bool {
        var descriptors = [
            pollfd(fd: wake.readEnd, events: Int16(POLLIN), revents: 0), pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            try wake.checkCancelled()
            var timeout: CInt = -1
            if let deadline {
                let left = deadline - ContinuousClock.now
                guard left > .zero else { return false }
                // Whole milliseconds, rounded up: a poll that returns early would spin.
                let (seconds, attoseconds) = left.components
                timeout = CInt(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
            }
            let ready = poll(&descriptors, 2, timeout)
            if ready < 0 && errno == EINTR { continue }
            try wake.checkCancelled()
            // A failed poll is left to the read, which says what is wrong with the descriptor.
            if ready < 0 || descriptors[1].revents != 0 { return true }
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
