#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// One of the process's standard output streams (stdout or stderr), written with `write(2)`.
///
/// Writing never traps: on Linux, Foundation's `FileHandle.write(_:)` is a `try!` that kills the
/// process (SIGILL) once the reader is gone (EPIPE) or the descriptor is closed (EBADF), and
/// `print` drops errors without a word. Here each write is whole (EINTR retried, partial writes
/// continued, a non-blocking descriptor waited for with `poll(2)`); the first failure is kept
/// and every later write is skipped. The caller hears of the failure once, as the result of
/// the write that met it, and decides what it means: for stderr, nothing (there is nowhere to
/// say it); for stdout, a failed command when what it printed was the point.
///
/// Thread safety: `failure` is a `Mutex`, held across each write so lines written from
/// different threads never interleave (a blocked reader therefore also blocks other writers,
/// as it would in the kernel); callable from any thread.
final class Output: Sendable {
    /// What became of one write.
    enum WriteResult: Equatable {
        /// All bytes were written.
        case written
        /// This write met the stream's first failure (errno); nothing more will be written.
        case failed(errno: Int32)
        /// The stream had failed before; nothing was written.
        case failedBefore
    }

    static let standardOutput = Output(fileDescriptor: 1, name: "stdout", closedAtStart: StandardDescriptors.closedAtStart.contains(1))
    static let standardError = Output(fileDescriptor: 2, name: "stderr", closedAtStart: StandardDescriptors.closedAtStart.contains(2))

    let fileDescriptor: Int32
    /// `stdout` or `stderr`, for messages.
    let name: String
    private let syscalls: DescriptorWriter
    private let failure: Mutex<Int32?>

    /// - Parameter closedAtStart: the descriptor was closed when the process started (it now
    ///   holds a `/dev/null` placeholder, see ``StandardDescriptors``): it counts as failed with
    ///   EBADF from the start.
    init(fileDescriptor: Int32, name: String, closedAtStart: Bool = false, syscalls: DescriptorWriter = .system) {
        self.fileDescriptor = fileDescriptor
        self.name = name
        self.syscalls = syscalls
        failure = Mutex(closedAtStart ? EBADF : nil)
    }

    /// The errno of the first failed write, if any.
    var failedErrno: Int32? { failure.withLock { $0 } }

    /// Writes `text` as UTF-8.
    @discardableResult
    func write(_ text: String) -> WriteResult {
        var text = text
        return text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    /// Writes all of `bytes`, unless the stream failed before.
    @discardableResult
    func write(_ bytes: UnsafeRawBufferPointer) -> WriteResult {
        failure.withLock { failure in
            if failure != nil { return .failedBefore }
            if let errno = syscalls.writeAll(fileDescriptor, bytes) {
                failure = errno
                return .failed(errno: errno)
            }
            return .written
        }
    }

    /// Words for a failed write's errno, naming the stream: "the reader of stdout has gone
    /// (broken pipe)", "stdout is closed", or the system's text.
    func words(for errno: Int32) -> String {
        switch errno {
        case EPIPE: return "the reader of \(name) has gone (broken pipe)"
        case EBADF: return "\(name) is closed"
        default: return "\(name): \(String(cString: strerror(errno)))"
        }
    }
}

/// The two system calls a write needs, so tests can force interrupted, short and failed writes.
///
/// Thread safety: immutable; the closures are called from any thread.
struct DescriptorWriter: Sendable {
    /// `write(2)`: bytes written, or -1 with the errno.
    let write: @Sendable (_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> (count: Int, errno: Int32)
    /// Waits with `poll(2)` until `fd` can take bytes (for a descriptor that is non-blocking).
    let waitWritable: @Sendable (_ fd: Int32) -> Void

    static let system = DescriptorWriter(
        write: { fd, bytes in
            #if canImport(Glibc)
            let count = Glibc.write(fd, bytes.baseAddress, bytes.count)
            #else
            let count = Darwin.write(fd, bytes.baseAddress, bytes.count)
            #endif
            return (count, count < 0 ? errno : 0)
        },
        waitWritable: { fd in
            var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = poll(&descriptor, 1, -1)
        })

    /// Writes every byte of `bytes` to `fd`: retries EINTR, continues after a partial write,
    /// waits out EAGAIN. Returns nil when all were written, else the errno that stopped it.
    func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let (count, error) = write(fd, UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            if count >= 0 {
                offset += count
                continue
            }
            switch error {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: waitWritable(fd)
            default: return error
            }
        }
        return nil
    }
}

/// Descriptors 0, 1 and 2 as the process found them. A closed one (`<&-`, `>&-`, `2>&-`) is
/// filled with `/dev/null` before anything else opens a file: otherwise the next descriptor
/// the process opens (a socket, libdispatch's eventfd) takes its number, and stdin would read
/// from it (seen: `Invalid argument (errno 22)` for `streamup URL <&-`) or a diagnostic would be
/// written into a socket. The numbers that were closed are remembered, so stdout and stderr
/// count as closed (``Output``) and an upload from a closed stdin is refused.
///
/// Thread safety: `closedAtStart` is computed once, on first use, which `main` makes the
/// first thing the process does.
enum StandardDescriptors {
    static let closedAtStart: Set<Int32> = {
        var closed: Set<Int32> = []
        for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) == -1 && errno == EBADF {
            closed.insert(fd)
            // The lowest free number is `fd` itself, since the ones below it are open by now.
            let placeholder = open("/dev/null", O_RDWR)
            if placeholder >= 0 && placeholder != fd {
                _ = dup2(placeholder, fd)
                _ = close(placeholder)
            }
        }
        return closed
    }()

    /// Why an upload of stdin cannot start, when stdin was closed (`<&-`); nil otherwise.
    static var closedStdinProblem: String? {
        guard closedAtStart.contains(0) else { return nil }
        return "stdin is closed (<&-), so there is nothing to stream: pipe something in (tail -F app.log | streamup URL) or follow a file (streamup tail FILE URL)"
    }

    /// Fills closed standard descriptors now (see the type's doc). Call first thing in `main`.
    static func reserve() {
        _ = closedAtStart
    }
}
