import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
