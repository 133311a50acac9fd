import StreamUpHTTP
import StreamUpSystem

/// One connection's place in the ``ConnectionRegistry``: whether it waits for a request head
/// (and since when), is inside a request, or was shed. Shared by the connection's thread, which
/// moves it between waiting and inside a request on every request, and the accept thread, which
/// sheds it.
///
/// ```
///  waiting(since) ──headArrived──▶ inRequest ──awaitingHead(since)──▶ waiting(since) …
///        └──────────── shed (accept thread, only from waiting; final) ─────────────▶ shed
/// ```
///
/// Thread safety: guarded by the `phase` mutex (the package's one lock type); callable from any
/// thread.
final class ConnectionSlot: Sendable {
    /// Where the connection is.
    ///
    /// Thread safety: a value type.
    private enum Phase: Equatable {
        /// Waiting for a head since that many nanoseconds after the epoch.
        case waiting(since: Int64)
        case inRequest
        case shed
    }

    let descriptor: CInt
    /// The registry's time origin; waiting times are stored as nanoseconds after it.
    private let epoch: ContinuousClock.Instant
    private let phase: Mutex<Phase>

    /// A slot for `descriptor`, waiting for its first head since `now`.
    init(descriptor: CInt, epoch: ContinuousClock.Instant, now: ContinuousClock.Instant) {
        self.descriptor = descriptor
        self.epoch = epoch
        phase = Mutex(.waiting(since: max(0, (now - epoch).nanoseconds)))
    }

    /// Since when the connection has waited for a head, as nanoseconds after the epoch; `nil`
    /// inside a request or once shed.
    var waitingSince: Int64? {
        phase.withLock { phase in
            guard case .waiting(let since) = phase else { return nil }
            return since
        }
    }

    var wasShed: Bool {
        phase.withLock { $0 == .shed }
    }

    /// The head arrived: the connection is inside a request. False when it was shed.
    func headArrived() -> Bool {
        phase.withLock { phase in
            switch phase {
            case .shed: return false
            case .waiting, .inRequest:
                phase = .inRequest
                return true
            }
        }
    }

    /// The request ended at `now`; the connection waits for the next head. A shed slot stays shed.
    func awaitingHead(since now: ContinuousClock.Instant) {
        let since = max(0, (now - epoch).nanoseconds)
        phase.withLock { phase in
            switch phase {
            case .shed: break
            case .waiting, .inRequest: phase = .waiting(since: since)
            }
        }
    }

    /// Marks the slot shed if it still waits since `since` (as read by ``waitingSince``); false
    /// when the connection moved on meanwhile.
    func shed(ifWaitingSince since: Int64) -> Bool {
        phase.withLock { phase in
            guard phase == .waiting(since: since) else { return false }
            phase = .shed
            return true
        }
    }
}
