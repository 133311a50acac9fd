import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Blocks in `wait4(2)` on a thread of its own, so the caller can watch the clock meanwhile.
///
/// Thread safety: the result is handed over through a semaphore and a mutex-guarded slot.
final class ExitWaiter: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let slot = LockedValue<ChildExit?>(nil)

    init(pid: pid_t) {
        let done = self.done
        let slot = self.slot
        let thread = Thread {
            var status: CInt = 0
            var usage = rusage()
            while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
            let end = MonotonicClock.now()
            let signal = status & 0x7f
            let code: Int32 = signal == 0 ? (status >> 8) & 0xff : -signal
            slot.set(
                ChildExit(
                    status: code,
                    userSeconds: Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6,
                    systemSeconds: Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6,
                    maxRSSKiB: Int(usage.ru_maxrss),
                    endNanos: end))
            done.signal()
        }
        thread.name = "bench.wait4"
        thread.start()
    }

    /// The exit, or nil if the child is still running after `waitingSeconds`.
    func result(waitingSeconds: Double) -> ChildExit? {
        guard done.wait(timeout: .now() + waitingSeconds) == .success else { return nil }
        return slot.get()
    }
}
