import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The set of open connections: enforces ``SinkConfiguration/maxConnections``, keeps slots
/// usable when slow clients fill them, and lets ``SinkServer/stop()`` wake every connection thread.
///
/// Shedding: each connection's ``ConnectionSlot`` says whether it waits for a request head (from
/// accept, and after each request on a kept-alive connection) and since when, or is inside a
/// request. When the slots are all taken, a new connection takes the place of the one that has
/// waited longest for its head: a client trickling its head (slowloris) or one idling between
/// requests. That one is marked shed and its reading side shut down (`shutdown(2)` `SHUT_RD`),
/// which wakes its thread; the thread answers `503` (or closes silently if no byte of a request
/// had come) and leaves. A connection inside a request is never shed: only when every slot holds
/// a request is a new connection answered `503`. A real request's head arrives in one piece, so
/// it leaves the shedding order before the next connection comes in.
///
/// Descriptor-reuse rule: a connection thread deregisters its descriptor *before* closing it,
/// and ``closeAll()`` and shedding call `shutdown(2)` (never `close`) while holding the lock. So a
/// number in the set always refers to the connection that registered it, never to a reused
/// descriptor. `shutdown` does not block, which is why it is the one action taken under the lock.
///
/// Thread safety: the set is guarded by the `connections` mutex (taken on accept and close, not
/// per request: each slot has a mutex of its own); callable from any thread.
final class ConnectionRegistry: Sendable {
    enum Admission {
        /// Admitted; `shed` is the connection whose place it took, if it took one.
        case admitted(ConnectionSlot, shed: CInt?)
        case full
        case closed
    }

    private struct State {
        var open: [CInt: ConnectionSlot] = [:]
        /// How many slots of `open` are shed (their threads are on their way out).
        var shedCount = 0
        var isClosed = false

        var liveCount: Int { open.count - shedCount }
    }

    private let limit: Int
    /// The time origin of every slot's waiting time.
    private let epoch = ContinuousClock.now
    private let connections = Mutex(State())

    init(limit: Int) {
        self.limit = limit
    }

    /// Admits `descriptor`, which starts waiting for its first head, if there is room, or room
    /// can be made by shedding, and the registry is not closed.
    func admit(_ descriptor: CInt, at now: ContinuousClock.Instant = .now) -> Admission {
        connections.withLock { state in
            if state.isClosed { return .closed }
            var shed: CInt?
            if state.liveCount >= limit {
                // Shed connections leave within moments; never let them pile up past a second limit.
                guard state.open.count < 2 * limit, let victim = ConnectionRegistry.shedLongestWaiting(state.open) else {
                    return .full
                }
                state.shedCount += 1
                Socket.shutdown(descriptor: victim, CInt(SHUT_RD))
                shed = victim
            }
            let slot = ConnectionSlot(descriptor: descriptor, epoch: epoch, now: now)
            state.open[descriptor] = slot
            return .admitted(slot, shed: shed)
        }
    }

    /// Sheds the slot waiting longest for a head and returns its descriptor; `nil` when none waits.
    private static func shedLongestWaiting(_ open: [CInt: ConnectionSlot]) -> CInt? {
        // A connection may move on between the scan and the shedding; then scan again.
        while true {
            var best: (slot: ConnectionSlot, since: Int64)?
            for slot in open.values {
                guard let since = slot.waitingSince else { continue }
                if let current = best, current.since <= since { continue }
                best = (slot, since)
            }
            guard let best else { return nil }
            if best.slot.shed(ifWaitingSince: best.since) { return best.slot.descriptor }
        }
    }

    /// Forgets `slot`'s connection; call before closing its descriptor.
    func remove(_ slot: ConnectionSlot) {
        connections.withLock { state in
            guard state.open[slot.descriptor] === slot else { return }
            state.open.removeValue(forKey: slot.descriptor)
            if slot.wasShed {
                state.shedCount -= 1
            }
        }
    }

    /// How many connections are open, not counting shed ones on their way out.
    var count: Int {
        connections.withLock { $0.liveCount }
    }

    /// Refuses further admissions and shuts down every open connection in both directions,
    /// which makes each connection thread's blocked `recv` return.
    func closeAll() {
        connections.withLock { state in
            state.isClosed = true
            for descriptor in state.open.keys {
                Socket.shutdown(descriptor: descriptor, CInt(SHUT_RDWR))
            }
        }
    }
}
