#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Wakes a thread blocked in `poll(2)`: the sink's accept thread when the server stops, a file
/// follower's or tailer's thread when its task is cancelled.
///
/// Owns a pipe (`pipe(2)`, both ends non-blocking and close-on-exec). ``signal()`` records that
/// it was signalled and writes one byte that is never read, so a thread polling ``readEnd`` for
/// `POLLIN` returns at once, and every later poll does too. ``close()`` closes both ends exactly
/// once; the owner calls it only after the polling thread has finished, so nobody polls a closed
/// (or reused) descriptor. Writing cannot raise SIGPIPE: the read end is closed only by
/// ``close()``, under the same lock, and a closed pipe is not written to.
///
/// Thread safety: guarded by the `state` mutex; callable from any thread.
package final class WakePipe: Sendable {
    private struct State {
        var signalled = false
        var closed = false
    }

    /// The end the waiting thread polls for `POLLIN`.
    package let readEnd: CInt
    private let writeEnd: CInt
    private let state = Mutex(State())

    /// Creates the pipe.
    /// - Parameters:
    ///   - operation: what a failure says was being done.
    ///   - failure: the caller's error type.
    /// - Throws: `failure` when `pipe(2)` fails (EMFILE, ENFILE).
    package init<Failure: SystemCallFailure>(
        _ operation: @autoclosure () -> String = "pipe", throwing failure: Failure.Type
    ) throws(Failure) {
        var ends: [CInt] = [-1, -1]
        try SystemCall<Failure>.runBlocking(operation()) { pipe(&ends) }
        readEnd = ends[0]
        writeEnd = ends[1]
        for fd in ends {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
    }

    deinit {
        close()
    }

    /// Whether ``signal()`` has been called.
    package var isSignalled: Bool {
        state.withLock { $0.signalled }
    }

    /// Throws `CancellationError` once ``signal()`` has been called (for owners that signal on
    /// cancellation).
    package func checkCancelled() throws(CancellationError) {
        if isSignalled { throw CancellationError() }
    }

    /// Records the signal and makes ``readEnd`` readable. Safe to call more than once and after
    /// ``close()``.
    package func signal() {
        state.withLock { state in
            guard !state.signalled else { return }
            state.signalled = true
            guard !state.closed else { return }
            var byte: UInt8 = 1
            let fd = writeEnd
            // One byte into an empty pipe: cannot block or fill it.
            _ = SystemCall<SystemCallError>.retryingInterrupts { write(fd, &byte, 1) }
        }
    }

    /// Closes both ends; later calls do nothing.
    package func close() {
        state.withLock { state in
            guard !state.closed else { return }
            state.closed = true
            SystemCall<SystemCallError>.close(readEnd)
            SystemCall<SystemCallError>.close(writeEnd)
        }
    }
}
