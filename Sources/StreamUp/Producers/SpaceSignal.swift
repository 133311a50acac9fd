import Foundation
import Synchronization

/// The output stream's delegate inside a ``StreamWriter``: turns `.hasSpaceAvailable` and
/// `.errorOccurred` events into wake-ups for one waiting writer, suspended (async) or blocked
/// (on a thread of its own).
///
/// An event that arrives while nobody waits is remembered, so a wait that starts just after it
/// returns at once; a stale wake-up only costs the writer one more `write` that returns 0.
///
/// Thread safety: `state` is guarded by `condition`; events arrive on the writer's event queue,
/// waits come from the writing task or thread.
final class SpaceSignal: NSObject, StreamDelegate, @unchecked Sendable {
    private struct State {
        var signaled = false
        var cancelled = false
        var waiter: CheckedContinuation<Void, Error>?
    }
    // NSCondition rather than Mutex: the blocking form sleeps on it.
    private let condition = NSCondition()
    private var state = State()

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        guard eventCode.contains(.hasSpaceAvailable) || eventCode.contains(.errorOccurred) else { return }
        signal()
    }

    /// Wakes the waiter, or remembers the wake-up for the next wait.
    func signal() {
        condition.lock()
        let waiter = state.waiter
        state.waiter = nil
        if waiter == nil { state.signaled = true }
        condition.broadcast()
        condition.unlock()
        waiter?.resume()
    }

    /// Ends the current and every later wait with `CancellationError`.
    func cancel() {
        condition.lock()
        state.cancelled = true
        let waiter = state.waiter
        state.waiter = nil
        condition.broadcast()
        condition.unlock()
        waiter?.resume(throwing: CancellationError())
    }

    /// Suspends until the next event (or returns at once if one came since the last wait).
    func wait() async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
                condition.lock()
                if state.cancelled || Task.isCancelled {
                    condition.unlock()
                    continuation.resume(throwing: CancellationError())
                } else if state.signaled {
                    state.signaled = false
                    condition.unlock()
                    continuation.resume()
                } else {
                    precondition(state.waiter == nil, "two tasks wait on one StreamWriter")
                    state.waiter = continuation
                    condition.unlock()
                }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Blocks the calling thread until the next event; never call it from a Swift concurrency task.
    func waitBlocking() throws {
        condition.lock()
        defer { condition.unlock() }
        while !state.signaled && !state.cancelled { condition.wait() }
        if state.cancelled { throw CancellationError() }
        state.signaled = false
    }
}
