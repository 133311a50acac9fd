import StreamUpSystem
import Synchronization

/// The server-wide part of ``SinkFaults``: which one-shot faults are still armed, how many
/// injected failures remain and how many resumable-upload bytes have arrived. Each claim succeeds for exactly one caller, so concurrent
/// connections never both take a one-shot fault.
///
/// Thread safety: atomics, and a mutex over the requests counted per stream; callable from any
/// thread.
final class FaultState: Sendable {
    let faults: SinkFaults
    private let dropArmed: Atomic<Bool>
    private let stallArmed: Atomic<Bool>
    private let failuresLeft: Atomic<Int>
    private let answersToLose: Atomic<Int>
    private let forgetArmed: Atomic<Bool>
    private let uploadBytes = Atomic<Int>(0)
    /// Body bytes received by all requests, and drops done so far (``SinkFaults/dropRepeatedly``).
    private let bodyBytes = Atomic<Int>(0)
    private let dropsDone = Atomic<Int>(0)
    /// Requests seen per stream id (``SinkFaults/loseAnswersOfStreamRequests``).
    private let streamRequests = StreamUpSystem.Mutex<[String: Int]>([:])

    init(faults: SinkFaults) {
        self.faults = faults
        dropArmed = Atomic(faults.dropAfterBytes != nil)
        stallArmed = Atomic(faults.stallAfterBytes != nil)
        failuresLeft = Atomic(faults.failNextRequests)
        answersToLose = Atomic(faults.loseAnswers)
        forgetArmed = Atomic(faults.forgetUploadsAfterBytes != nil)
    }

    /// Counts `count` more resumable-upload body bytes. Returns how many of them arrive up to
    /// and including byte ``SinkFaults/forgetUploadsAfterBytes`` when that byte is among them
    /// (for exactly one caller), otherwise `nil`.
    func claimForget(adding count: Int) -> Int? {
        guard let limit = faults.forgetUploadsAfterBytes, count > 0, forgetArmed.load(ordering: .acquiring) else {
            return nil
        }
        let after = uploadBytes.add(count, ordering: .acquiringAndReleasing).newValue
        let before = after - count
        guard before < limit, after >= limit, forgetArmed.exchange(false, ordering: .acquiringAndReleasing) else {
            return nil
        }
        return limit - before
    }

    /// Counts body bytes received (for ``SinkFaults/dropRepeatedly``).
    func countBody(_ count: Int) {
        if faults.dropRepeatedly { bodyBytes.add(count, ordering: .relaxed) }
    }

    /// With ``SinkFaults/dropRepeatedly``: how many more body bytes, across all requests,
    /// until the next drop is due (0: now); `nil` otherwise.
    var bytesUntilNextDrop: Int? {
        guard faults.dropRepeatedly, let every = faults.dropAfterBytes else { return nil }
        let due = (dropsDone.load(ordering: .acquiring) + 1) * every
        return max(0, due - bodyBytes.load(ordering: .acquiring))
    }

    /// True when the request in flight, which has `received` body bytes, is to be dropped now.
    /// Once: the first request reaching ``SinkFaults/dropAfterBytes``. Every
    /// (``SinkFaults/dropRepeatedly``): whenever another `dropAfterBytes` bytes have arrived
    /// across requests, one caller per drop.
    func claimDrop(received: Int) -> Bool {
        guard let limit = faults.dropAfterBytes else { return false }
        guard faults.dropRepeatedly else {
            return received >= limit && dropArmed.exchange(false, ordering: .acquiringAndReleasing)
        }
        let done = dropsDone.load(ordering: .acquiring)
        guard bodyBytes.load(ordering: .acquiring) >= (done + 1) * limit else { return false }
        return dropsDone.compareExchange(expected: done, desired: done + 1, ordering: .acquiringAndReleasing).exchanged
    }

    /// True for the first caller once ``SinkFaults/stallAfterBytes`` is set.
    func claimStall() -> Bool {
        guard faults.stallAfterBytes != nil else { return false }
        return stallArmed.exchange(false, ordering: .acquiringAndReleasing)
    }

    /// Whether the stall is still armed (a request may yet take it).
    var isStallArmed: Bool {
        stallArmed.load(ordering: .acquiring)
    }

    /// Whether the one-time drop (without ``SinkFaults/dropRepeatedly``) is still armed.
    var isDropArmed: Bool {
        dropArmed.load(ordering: .acquiring)
    }

    /// True when the request just begun is to be answered ``SinkFaults/failStatus``.
    func claimFailure() -> Bool {
        Self.claim(from: failuresLeft)
    }

    /// True when the `200` about to be sent is to be lost (``SinkFaults/loseAnswers``).
    func claimLostAnswer() -> Bool {
        Self.claim(from: answersToLose)
    }

    /// Counts a request of stream `id` whose head arrived; true when its answer is to be lost
    /// (``SinkFaults/loseAnswersOfStreamRequests``).
    func countStreamRequest(_ id: String) -> Bool {
        guard !faults.loseAnswersOfStreamRequests.isEmpty else { return false }
        let number = streamRequests.withLock { counts in
            counts[id, default: 0] += 1
            return counts[id]!
        }
        return faults.loseAnswersOfStreamRequests.contains(number)
    }

    /// Takes one from `counter` if it is above zero.
    private static func claim(from counter: borrowing Atomic<Int>) -> Bool {
        var current = counter.load(ordering: .relaxed)
        while current > 0 {
            let (exchanged, original) = counter.compareExchange(
                expected: current, desired: current - 1, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }
}
