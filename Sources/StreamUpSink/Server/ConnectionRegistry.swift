import Synchronization

/// The set of open connections: enforces ``SinkConfiguration/maxConnections`` and lets
/// ``SinkServer/stop()`` wake every connection thread.
///
/// Descriptor-reuse rule: a connection thread deregisters its descriptor *before* closing it,
/// and ``closeAll()`` calls `shutdown(2)` (never `close`) while holding the lock. So a number
/// in the set always refers to the connection that registered it, never to a reused descriptor.
/// `shutdown` does not block, which is why it is the one action taken under the lock.
///
/// Thread safety: guarded by the `connections` mutex; callable from any thread.
final class ConnectionRegistry: Sendable {
    enum Admission: Equatable {
        case admitted
        case full
        case closed
    }

    private struct State {
        var open: Set<CInt> = []
        var isClosed = false
    }

    private let limit: Int
    private let connections = Mutex(State())

    init(limit: Int) {
        self.limit = limit
    }

    /// Admits `descriptor` if there is room and the registry is not closed.
    func admit(_ descriptor: CInt) -> Admission {
        connections.withLock { state in
            if state.isClosed { return .closed }
            if state.open.count >= limit { return .full }
            state.open.insert(descriptor)
            return .admitted
        }
    }

    /// Forgets `descriptor`; call before closing it.
    func remove(_ descriptor: CInt) {
        _ = connections.withLock { $0.open.remove(descriptor) }
    }

    /// How many connections are open.
    var count: Int {
        connections.withLock { $0.open.count }
    }

    /// Refuses further admissions and shuts down every open connection in both directions,
    /// which makes each connection thread's blocked `recv` return.
    func closeAll() {
        connections.withLock { state in
            state.isClosed = true
            for descriptor in state.open {
                Socket.shutdown(descriptor: descriptor, CInt(SHUT_RDWR))
            }
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
