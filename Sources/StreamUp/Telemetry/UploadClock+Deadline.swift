import StreamUpSystem

/// The deadlines of ``TelemetryEmitter/flush(within:)`` and ``TelemetryEmitter/finish(within:)``,
/// on the emitter's clock (the continuous clock, or a test's manual one).
extension UploadClock {
    /// Runs `operation` and returns what it returns, or throws ``StreamUpError`` (`.timedOut`,
    /// `message`) once `timeout` has passed first. The operation then goes on on its own (it
    /// must end when the upload ends); `onTimeout` runs before the error is thrown.
    func deadline<T: Sendable>(
        _ timeout: Duration, _ message: String, onTimeout: @escaping @Sendable () -> Void = {},
        _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let outcome = FirstOutcome<T>()
        let end = now.advanced(by: timeout)
        Task {
            do {
                outcome.settle(.success(try await operation()))
            } catch {
                outcome.settle(.failure(error))
            }
        }
        let timer = Task { [self] in
            guard (try? await sleep(until: end)) != nil else { return }
            onTimeout()
            outcome.settle(.failure(StreamUpError(.timedOut, message)))
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await outcome.value()
        } onCancel: {
            outcome.settle(.failure(CancellationError()))
        }
    }
}

/// Whichever of several racers settles first: its result is the one ``value()`` returns.
///
/// Thread safety: `state` is guarded by its `Mutex`; the continuation is resumed outside it.
private final class FirstOutcome<T: Sendable>: Sendable {
    private struct State {
        var result: Result<T, Error>?
        var waiter: CheckedContinuation<T, Error>?
    }
    private let state = Mutex(State())

    /// Settles with `result` unless another racer came first.
    func settle(_ result: Result<T, Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<T, Error>? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(with: result)
    }

    /// The first result, once there is one.
    func value() async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let result = state.withLock { state -> Result<T, Error>? in
                if state.result == nil { state.waiter = continuation }
                return state.result
            }
            if let result { continuation.resume(with: result) }
        }
    }
}
