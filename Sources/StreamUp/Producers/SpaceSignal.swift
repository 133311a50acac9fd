import Foundation
import StreamUpSystem

/// Wakes the one writer of the buffer, suspended (async) or blocked (on a thread of its own),
/// when the full buffer gets space, or the buffer fails or closes.
///
/// The writer asks the pair for a notification only after a write found the buffer full, so
/// wake-ups happen on transitions, not per write. A signal that arrives while nobody waits is
/// remembered, so a wait that starts just after it returns at once; a stale wake-up only costs
/// the writer one more `write` that returns 0.
///
/// Thread safety: `state` is guarded by `condition`; signals come from the reading thread (or
/// whoever fails or closes the pair), waits from the writing task or thread.
final class SpaceSignal: @unchecked Sendable {
    private struct State {
        var signaled = false
        var cancelled = false
        var waiter: CheckedContinuation<Void, Error>?
    }
    // NSCondition rather than Mutex: the blocking form sleeps on it.
    private let condition = NSCondition()
    private var state = State()

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

    /// Suspends until `buffer` has space (returns at once if it has some now).
    func wait(for buffer: some WritableBuffer) async throws {
        guard buffer.requestSpaceNotification() else { return }
        try await wait()
    }

    /// Blocks until `buffer` has space (returns at once if it has some now); never call it from a
    /// Swift concurrency task.
    func waitBlocking(for buffer: some WritableBuffer) throws {
        guard buffer.requestSpaceNotification() else { return }
        try waitBlocking()
    }

    /// Suspends until the next signal (or returns at once if one came since the last wait).
    private func wait() async throws {
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

    /// Blocks the calling thread until the next signal.
    private func waitBlocking() throws {
        condition.lock()
        defer { condition.unlock() }
        while !state.signaled && !state.cancelled { condition.wait() }
        if state.cancelled { throw CancellationError() }
        state.signaled = false
    }
}
