import Synchronization

/// The server-wide part of ``SinkFaults``: which one-shot faults are still armed, how many
/// injected failures remain and how many resumable-upload bytes have arrived. Each claim succeeds for exactly one caller, so concurrent
/// connections never both take a one-shot fault.
///
/// Thread safety: atomics only; callable from any thread.
final class FaultState: Sendable {
    let faults: SinkFaults
    private let dropArmed: Atomic<Bool>
    private let stallArmed: Atomic<Bool>
    private let failuresLeft: Atomic<Int>
    private let forgetArmed: Atomic<Bool>
    private let uploadBytes = Atomic<Int>(0)

    init(faults: SinkFaults) {
        self.faults = faults
        dropArmed = Atomic(faults.dropAfterBytes != nil)
        stallArmed = Atomic(faults.stallAfterBytes != nil)
        failuresLeft = Atomic(faults.failNextRequests)
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

    /// True when a request that has reached ``SinkFaults/dropAfterBytes`` is to be dropped:
    /// always with ``SinkFaults/dropEveryRequest``, otherwise for the first caller only.
    func claimDrop() -> Bool {
        guard faults.dropAfterBytes != nil else { return false }
        if faults.dropEveryRequest { return true }
        return dropArmed.exchange(false, ordering: .acquiringAndReleasing)
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

    /// Whether the drop is still armed for some request.
    var isDropArmed: Bool {
        faults.dropEveryRequest || dropArmed.load(ordering: .acquiring)
    }

    /// True when the request just begun is to be answered ``SinkFaults/failStatus``.
    func claimFailure() -> Bool {
        var current = failuresLeft.load(ordering: .relaxed)
        while current > 0 {
            let (exchanged, original) = failuresLeft.compareExchange(
                expected: current, desired: current - 1, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }
}
