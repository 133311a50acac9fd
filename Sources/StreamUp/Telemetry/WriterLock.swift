import StreamUpSystem

/// An async mutual-exclusion lock with FIFO hand-over, so that concurrent `emit` calls write
/// their lines whole and in turn, even when a writer suspends mid-line waiting for space.
///
/// Thread safety: `state` is guarded by its `Mutex`; continuations are resumed after the lock
/// is released.
final class WriterLock: Sendable {
    private struct State {
        var held = false
        var waiters: [(id: Int, continuation: CheckedContinuation<Void, Error>)] = []
        var nextID = 0
    }
    private let state = Mutex(State())

    /// Takes the lock now if it is free.
    func tryLock() -> Bool {
        state.withLock { state in
            guard !state.held else { return false }
            state.held = true
            return true
        }
    }

    /// Takes the lock, waiting in line; throws `CancellationError` if cancelled while waiting.
    func lock() async throws {
        let id = state.withLock { state -> Int in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
                enum Outcome { case granted, cancelled, queued }
                let outcome = state.withLock { state -> Outcome in
                    if !state.held {
                        state.held = true
                        return .granted
                    }
                    // Checked under the lock: a cancel handler that already ran found nothing
                    // to remove, so this waiter must not be queued.
                    if Task.isCancelled { return .cancelled }
                    state.waiters.append((id, continuation))
                    return .queued
                }
                switch outcome {
                case .granted: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .queued: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Error>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Releases the lock, handing it straight to the longest waiter if there is one.
    func unlock() {
        let next = state.withLock { state -> CheckedContinuation<Void, Error>? in
            precondition(state.held, "unlock of a WriterLock that is not held")
            if state.waiters.isEmpty {
                state.held = false
                return nil
            }
            return state.waiters.removeFirst().continuation
        }
        next?.resume()
    }
}
