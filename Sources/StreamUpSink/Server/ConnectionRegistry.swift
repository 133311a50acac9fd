#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// The set of open connections: enforces ``SinkConfiguration/maxConnections``, keeps slots
/// usable when slow clients fill them, and lets ``SinkServer/stop()`` wake every connection thread.
///
/// Shedding: each connection tells the registry when it starts waiting for a request head (at
/// accept, and after each request on a kept-alive connection) and when the head has arrived. When
/// the slots are all taken, a new connection takes the place of the one that has waited longest
/// for its head: a client trickling its head (slowloris) or one idling between requests. That
/// one is marked shed and its reading side shut down (`shutdown(2)` `SHUT_RD`), which wakes its
/// thread; the thread answers `503` (or closes silently if no byte of a request had come) and
/// leaves. A connection inside a request is never shed: only when every slot holds a request is
/// a new connection answered `503`. A real request's head arrives in one piece, so it leaves the
/// shedding order before the next connection comes in.
///
/// Descriptor-reuse rule: a connection thread deregisters its descriptor *before* closing it,
/// and ``closeAll()`` and shedding call `shutdown(2)` (never `close`) while holding the lock. So a
/// number in the set always refers to the connection that registered it, never to a reused
/// descriptor. `shutdown` does not block, which is why it is the one action taken under the lock.
///
/// Thread safety: guarded by the `connections` mutex; callable from any thread.
final class ConnectionRegistry: Sendable {
    enum Admission: Equatable {
        case admitted
        /// Admitted in the place of `shed`, which has been shut down for reading.
        case admittedByShedding(shed: CInt)
        case full
        case closed
    }

    private struct Entry {
        /// Since when the connection has waited for a request head; `nil` inside a request.
        var awaitingHeadSince: ContinuousClock.Instant?
        var isShed = false
    }

    private struct State {
        var open: [CInt: Entry] = [:]
        /// How many entries of `open` are shed (their threads are on their way out).
        var shedCount = 0
        var isClosed = false

        var liveCount: Int { open.count - shedCount }
    }

    private let limit: Int
    private let connections = Mutex(State())

    init(limit: Int) {
        self.limit = limit
    }

    /// Admits `descriptor`, which starts waiting for its first head, if there is room, or room
    /// can be made by shedding, and the registry is not closed.
    func admit(_ descriptor: CInt, at now: ContinuousClock.Instant = .now) -> Admission {
        connections.withLock { state in
            if state.isClosed { return .closed }
            var admission = Admission.admitted
            if state.liveCount >= limit {
                // Shed connections leave within moments; never let them pile up past a second limit.
                guard state.open.count < 2 * limit, let victim = ConnectionRegistry.longestWaiting(state.open) else {
                    return .full
                }
                state.open[victim]?.isShed = true
                state.shedCount += 1
                Socket.shutdown(descriptor: victim, CInt(SHUT_RD))
                admission = .admittedByShedding(shed: victim)
            }
            state.open[descriptor] = Entry(awaitingHeadSince: now)
            return admission
        }
    }

    /// The connection waiting longest for a head, among those not yet shed.
    private static func longestWaiting(_ open: [CInt: Entry]) -> CInt? {
        var best: (descriptor: CInt, since: ContinuousClock.Instant)?
        for (descriptor, entry) in open where !entry.isShed {
            guard let since = entry.awaitingHeadSince else { continue }
            if let current = best, current.since <= since { continue }
            best = (descriptor, since)
        }
        return best?.descriptor
    }

    /// `descriptor` has finished a request and waits for the next head.
    func awaitingHead(_ descriptor: CInt, since now: ContinuousClock.Instant = .now) {
        connections.withLock { state in
            state.open[descriptor]?.awaitingHeadSince = now
        }
    }

    /// `descriptor`'s head has arrived. False when the connection was shed meanwhile: it must
    /// not serve the request.
    func headArrived(_ descriptor: CInt) -> Bool {
        connections.withLock { state in
            guard let entry = state.open[descriptor], !entry.isShed else { return false }
            state.open[descriptor]?.awaitingHeadSince = nil
            return true
        }
    }

    /// Whether `descriptor` was shed to make room for a newer connection.
    func wasShed(_ descriptor: CInt) -> Bool {
        connections.withLock { $0.open[descriptor]?.isShed ?? false }
    }

    /// Forgets `descriptor`; call before closing it.
    func remove(_ descriptor: CInt) {
        connections.withLock { state in
            if state.open.removeValue(forKey: descriptor)?.isShed == true {
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
