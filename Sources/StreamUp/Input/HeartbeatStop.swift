import StreamUpSystem

/// Ends a ``HeartbeatProducer`` from outside: the waiting beat wakes at once, the producer
/// writes one last record with the given fields and returns.
///
/// Thread safety: guarded by `state`'s `Mutex`; callable from any thread or task.
package final class HeartbeatStop: Sendable {
    private struct State {
        var final: [(name: String, value: JSONValue)]?
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    package init() {}

    /// Stops the heartbeat; its last record carries `final` (e.g. a command's exit status).
    package func stop(final: [(name: String, value: JSONValue)] = []) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard state.final == nil else { return nil }
            state.final = final
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func finalFieldsIfStopped() -> [(name: String, value: JSONValue)]? {
        state.withLock { $0.final }
    }

    /// Waits until `deadline` on `clock`; returns the final fields if stopped first (or before).
    func wait<C: Clock>(until deadline: C.Instant, on clock: C) async throws -> [(name: String, value: JSONValue)]? {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await clock.sleep(until: deadline, tolerance: nil)
                return false
            }
            group.addTask {
                await self.waitForStop()
                return true
            }
            defer { group.cancelAll() }
            _ = try await group.next()
            return finalFieldsIfStopped()
        }
    }

    private func waitForStop() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let stopped = state.withLock { state -> Bool in
                    // Checked under the lock: a cancel handler that ran before this point
                    // found no waiter to resume, so return now instead of waiting forever.
                    if state.final != nil || Task.isCancelled { return true }
                    state.waiter = continuation
                    return false
                }
                if stopped { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
