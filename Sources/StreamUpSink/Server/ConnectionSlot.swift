import StreamUpHTTP
import Synchronization

/// One connection's place in the ``ConnectionRegistry``: whether it waits for a request head
/// (and since when), is inside a request, or was shed. Shared by the connection's thread, which
/// moves it between waiting and inside a request on every request, and the accept thread, which
/// sheds it; one atomic word, so the per-request moves take no lock.
///
/// ```
///  waiting(since) ──headArrived──▶ inRequest ──awaitingHead(since)──▶ waiting(since) …
///        └──────────── shed (accept thread, only from waiting; final) ─────────────▶ shed
/// ```
///
/// Thread safety: one atomic; callable from any thread.
final class ConnectionSlot: Sendable {
    let descriptor: CInt
    /// The registry's time origin; waiting times are stored as nanoseconds after it.
    private let epoch: ContinuousClock.Instant
    /// `>= 0`: waiting for a head since that many nanoseconds after `epoch`; else a marker.
    private let phase: Atomic<Int64>

    private static let inRequest: Int64 = -1
    private static let shed: Int64 = -2

    /// A slot for `descriptor`, waiting for its first head since `now`.
    init(descriptor: CInt, epoch: ContinuousClock.Instant, now: ContinuousClock.Instant) {
        self.descriptor = descriptor
        self.epoch = epoch
        phase = Atomic(max(0, (now - epoch).nanoseconds))
    }

    /// Since when the connection has waited for a head, as nanoseconds after the epoch; `nil`
    /// inside a request or once shed.
    var waitingSince: Int64? {
        let value = phase.load(ordering: .acquiring)
        return value >= 0 ? value : nil
    }

    var wasShed: Bool {
        phase.load(ordering: .acquiring) == ConnectionSlot.shed
    }

    /// The head arrived: the connection is inside a request. False when it was shed.
    func headArrived() -> Bool {
        var current = phase.load(ordering: .acquiring)
        while current != ConnectionSlot.shed {
            if current == ConnectionSlot.inRequest { return true }
            let (exchanged, original) = phase.compareExchange(
                expected: current, desired: ConnectionSlot.inRequest, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// The request ended at `now`; the connection waits for the next head. A shed slot stays shed.
    func awaitingHead(since now: ContinuousClock.Instant) {
        let since = max(0, (now - epoch).nanoseconds)
        var current = phase.load(ordering: .acquiring)
        while current != ConnectionSlot.shed {
            let (exchanged, original) = phase.compareExchange(
                expected: current, desired: since, ordering: .acquiringAndReleasing)
            if exchanged { return }
            current = original
        }
    }

    /// Marks the slot shed if it still waits since `since` (as read by ``waitingSince``); false
    /// when the connection moved on meanwhile.
    func shed(ifWaitingSince since: Int64) -> Bool {
        phase.compareExchange(expected: since, desired: ConnectionSlot.shed, ordering: .acquiringAndReleasing).exchanged
    }
}
