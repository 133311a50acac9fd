import StreamUpSystem

/// The producer behind a ``TelemetryEmitter``: it hands the upload's ``StreamWriter`` to the
/// emitter's callers and keeps the body open until `finish()`.
///
/// Thread safety: `state` is guarded by its `Mutex`; continuations are resumed outside it.
final class PushChannel: Producer {
    private struct State {
        var writer: StreamWriter?
        var writerWaiters: [CheckedContinuation<StreamWriter?, Never>] = []
        /// The upload is over: there is no writer and there will be none.
        var closed = false
        var finished = false
        var finishWaiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    func produce(into writer: StreamWriter) async throws {
        let waiters = state.withLock { state in
            state.writer = writer
            defer { state.writerWaiters = [] }
            return state.writerWaiters
        }
        for waiter in waiters { waiter.resume(returning: writer) }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let finished = state.withLock { state -> Bool in
                if state.finished { return true }
                state.finishWaiter = continuation
                return false
            }
            if finished { continuation.resume() }
        }
    }

    /// The writer, once the upload has started; nil once the upload is over.
    func writer() async -> StreamWriter? {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> (Bool, StreamWriter?) in
                if state.closed { return (true, nil) }
                if let writer = state.writer { return (true, writer) }
                state.writerWaiters.append(continuation)
                return (false, nil)
            }
            if ready.0 { continuation.resume(returning: ready.1) }
        }
    }

    func writerIfReady() -> StreamWriter? {
        state.withLock { $0.closed ? nil : $0.writer }
    }

    /// The upload is over: wakes callers waiting for a writer with nil.
    func close() {
        let waiters = state.withLock { state in
            state.closed = true
            defer { state.writerWaiters = [] }
            return state.writerWaiters
        }
        for waiter in waiters { waiter.resume(returning: nil) }
    }

    /// Lets `produce` return, which ends the body.
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.finished = true
            defer { state.finishWaiter = nil }
            return state.finishWaiter
        }
        waiter?.resume()
    }
}
