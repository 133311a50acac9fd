#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Wakes the follower's thread out of `poll(2)` when its task is cancelled.
///
/// Owns a pipe (`pipe(2)`, both ends non-blocking and close-on-exec). ``cancel()`` records the
/// cancellation and writes one byte that is never read, so a thread polling ``readEnd`` returns
/// at once and every later poll does too. ``close()`` closes both ends exactly once; the owner
/// calls it only after the polling thread has finished, so nobody polls a closed (or reused)
/// descriptor.
///
/// Thread safety: guarded by the `state` mutex; callable from any thread.
final class WakeSignal: Sendable {
    private struct State {
        var cancelled = false
        var closed = false
    }

    /// The end the follower's thread polls for `POLLIN`.
    let readEnd: CInt
    private let writeEnd: CInt
    private let state = Mutex(State())

    init() throws(StreamUpError) {
        var ends: [CInt] = [-1, -1]
        try SystemCall.retrying("pipe for the follower's wake-up failed") { pipe(&ends) }
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

    /// Whether ``cancel()`` has been called.
    var isCancelled: Bool {
        state.withLock { $0.cancelled }
    }

    /// Throws `CancellationError` once ``cancel()`` has been called.
    func checkCancelled() throws(CancellationError) {
        if isCancelled { throw CancellationError() }
    }

    /// Records the cancellation and makes ``readEnd`` readable. Safe to call more than once and
    /// after ``close()``.
    func cancel() {
        state.withLock { state in
            guard !state.cancelled else { return }
            state.cancelled = true
            guard !state.closed else { return }
            var byte: UInt8 = 1
            let fd = writeEnd
            _ = SystemCall.retryingInterrupts { write(fd, &byte, 1) }
        }
    }

    /// Closes both ends; later calls do nothing.
    func close() {
        state.withLock { state in
            guard !state.closed else { return }
            state.closed = true
            SystemCall.close(readEnd)
            SystemCall.close(writeEnd)
        }
    }
}
