import StreamUpSystem

/// The server-wide part of ``SinkFaults``: which one-shot faults are still armed, how many
/// injected failures remain and how many resumable-upload bytes have arrived. Each claim succeeds
/// for exactly one caller, so concurrent connections never both take a one-shot fault.
///
/// Thread safety: guarded by the `state` mutex (the package's one lock type); callable from any
/// thread.
final class FaultState: Sendable {
    /// What the faults have used up so far.
    ///
    /// Thread safety: a value type, kept behind `state`.
    private struct State {
        var dropArmed: Bool
        var stallArmed: Bool
        var failuresLeft: Int
        var answersToLose: Int
        var forgetArmed: Bool
        var uploadBytes = 0
        /// Body bytes received by all requests, and drops done so far (``SinkFaults/dropRepeatedly``).
        var bodyBytes = 0
        var dropsDone = 0
        /// Requests seen per stream id (``SinkFaults/loseAnswersOfStreamRequests``).
        var streamRequests: [String: Int] = [:]
    }

    let faults: SinkFaults
    private let state: Mutex<State>

    init(faults: SinkFaults) {
        self.faults = faults
        state = Mutex(
            State(
                dropArmed: faults.dropAfterBytes != nil, stallArmed: faults.stallAfterBytes != nil, failuresLeft: faults.failNextRequests,
                answersToLose: faults.loseAnswers, forgetArmed: faults.forgetUploadsAfterBytes != nil))
    }

    /// Counts `count` more resumable-upload body bytes. Returns how many of them arrive up to
    /// and including byte ``SinkFaults/forgetUploadsAfterBytes`` when that byte is among them
    /// (for exactly one caller), otherwise `nil`.
    func claimForget(adding count: Int) -> Int? {
        guard let limit = faults.forgetUploadsAfterBytes, count > 0 else { return nil }
        return state.withLock { state in
            guard state.forgetArmed else { return nil }
            let before = state.uploadBytes
            state.uploadBytes += count
            guard before < limit, state.uploadBytes >= limit else { return nil }
            state.forgetArmed = false
            return limit - before
        }
    }

    /// Counts body bytes received (for ``SinkFaults/dropRepeatedly``).
    func countBody(_ count: Int) {
        if faults.dropRepeatedly { state.withLock { $0.bodyBytes += count } }
    }

    /// With ``SinkFaults/dropRepeatedly``: how many more body bytes, across all requests,
    /// until the next drop is due (0: now); `nil` otherwise.
    var bytesUntilNextDrop: Int? {
        guard faults.dropRepeatedly, let every = faults.dropAfterBytes else { return nil }
        return state.withLock { max(0, ($0.dropsDone + 1) * every - $0.bodyBytes) }
    }

    /// True when the request in flight, which has `received` body bytes, is to be dropped now.
    /// Once: the first request reaching ``SinkFaults/dropAfterBytes``. Every
    /// (``SinkFaults/dropRepeatedly``): whenever another `dropAfterBytes` bytes have arrived
    /// across requests, one caller per drop.
    func claimDrop(received: Int) -> Bool {
        guard let limit = faults.dropAfterBytes else { return false }
        let repeatedly = faults.dropRepeatedly
        return state.withLock { state in
            guard repeatedly else {
                guard received >= limit, state.dropArmed else { return false }
                state.dropArmed = false
                return true
            }
            guard state.bodyBytes >= (state.dropsDone + 1) * limit else { return false }
            state.dropsDone += 1
            return true
        }
    }

    /// True for the first caller once ``SinkFaults/stallAfterBytes`` is set.
    func claimStall() -> Bool {
        guard faults.stallAfterBytes != nil else { return false }
        return state.withLock { state in
            defer { state.stallArmed = false }
            return state.stallArmed
        }
    }

    /// Whether the stall is still armed (a request may yet take it).
    var isStallArmed: Bool {
        state.withLock { $0.stallArmed }
    }

    /// Whether the one-time drop (without ``SinkFaults/dropRepeatedly``) is still armed.
    var isDropArmed: Bool {
        state.withLock { $0.dropArmed }
    }

    /// True when the request just begun is to be answered ``SinkFaults/failStatus``.
    func claimFailure() -> Bool {
        state.withLock { Self.claim(from: &$0.failuresLeft) }
    }

    /// True when the `200` about to be sent is to be lost (``SinkFaults/loseAnswers``).
    func claimLostAnswer() -> Bool {
        state.withLock { Self.claim(from: &$0.answersToLose) }
    }

    /// Counts a request of stream `id` whose head arrived; true when its answer is to be lost
    /// (``SinkFaults/loseAnswersOfStreamRequests``).
    func countStreamRequest(_ id: String) -> Bool {
        guard !faults.loseAnswersOfStreamRequests.isEmpty else { return false }
        let number = state.withLock { state in
            state.streamRequests[id, default: 0] += 1
            return state.streamRequests[id]!
        }
        return faults.loseAnswersOfStreamRequests.contains(number)
    }

    /// Takes one from `counter` if it is above zero.
    private static func claim(from counter: inout Int) -> Bool {
        guard counter > 0 else { return false }
        counter -= 1
        return true
    }
}
