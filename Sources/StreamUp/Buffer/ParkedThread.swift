import Foundation

/// A thread parked until a ``ReplayLog`` waiter's wake-up: a writer in line, a live reader, a
/// writer waiting for room on the storage. The wake-up comes after the buffer's lock is
/// released. A condition variable, not a second lock on the buffer's state: it guards only
/// the one wake-up it carries (`NSCondition` is `pthread_cond_t`, which ThreadSanitizer sees).
///
/// Thread safety: `@unchecked Sendable` because `wakeup` is guarded by `condition`; one thread
/// waits, one wakes it, once.
final class ParkedThread: @unchecked Sendable {
    private let condition = NSCondition()
    private var wakeup: LogWakeup?

    func wake(_ wakeup: LogWakeup) {
        condition.lock()
        self.wakeup = wakeup
        condition.signal()
        condition.unlock()
    }

    /// Parks until ``wake(_:)``; returns what it said.
    func wait() -> LogWakeup {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let wakeup { return wakeup }
            condition.wait()
        }
    }
}
