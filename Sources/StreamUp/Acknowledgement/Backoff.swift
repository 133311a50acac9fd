import StreamUpSystem

/// The wait before a retry, which ``wake()`` can cut short: a graceful finish (or a flush with
/// a deadline) tries again at once instead of waiting out a backoff that may be 30 s long.
///
/// Thread safety: `state` is guarded by its `Mutex`; `sleep` is called by the one delivery
/// task, `wake` from any thread. The sleeping task is cancelled outside the lock.
final class Backoff: Sendable {
    private struct State {
        var sleeper: Task<Void, Error>?
        /// `wake()` was called since the last sleep began: the next (or current) one ends now.
        var woken = false
    }
    private let state = Mutex(State())

    /// Sleeps until `deadline` on `clock`; returns true when ``wake()`` ended the wait early (or
    /// had been called since the last sleep).
    /// - Throws: `CancellationError` when the calling task is cancelled.
    func sleep(until deadline: UploadClock.Instant, on clock: UploadClock) async throws -> Bool {
        let sleeper = Task { try await clock.sleep(until: deadline) }
        let wokenAlready = state.withLock { state -> Bool in
            if state.woken {
                state.woken = false
                return true
            }
            state.sleeper = sleeper
            return false
        }
        if wokenAlready {
            sleeper.cancel()
            return true
        }
        _ = await withTaskCancellationHandler {
            await sleeper.result
        } onCancel: {
            sleeper.cancel()
        }
        let woken = state.withLock { state -> Bool in
            state.sleeper = nil
            defer { state.woken = false }
            return state.woken
        }
        try Task.checkCancellation()
        return woken
    }

    /// Ends the current backoff now, or the next one as soon as it begins.
    func wake() {
        let sleeper = state.withLock { state -> Task<Void, Error>? in
            state.woken = true
            return state.sleeper
        }
        sleeper?.cancel()
    }
}
