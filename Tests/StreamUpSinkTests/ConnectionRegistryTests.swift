import Testing

@testable import StreamUpSink

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Admission and shedding on real (socket-pair) descriptors, without a server.
@Suite struct ConnectionRegistryTests {
    /// One end of a fresh socket pair, and its peer kept open so `shutdown` has a connection.
    ///
    /// Thread safety: not Sendable; used by one test.
    private final class Pair {
        let local: CInt
        let peer: CInt

        init() throws {
            #if canImport(Glibc)
            let type = CInt(SOCK_STREAM.rawValue)
            #else
            let type = SOCK_STREAM
            #endif
            var ends: [CInt] = [-1, -1]
            guard socketpair(AF_UNIX, type, 0, &ends) == 0 else { throw TestClientError(description: "socketpair") }
            local = ends[0]
            peer = ends[1]
        }

        deinit {
            _ = close(local)
            _ = close(peer)
        }

        /// Whether a read on `local` would see end of file now (it was shut down for reading).
        var isShutForReading: Bool {
            var byte: UInt8 = 0
            return recv(local, &byte, 1, CInt(MSG_DONTWAIT)) == 0
        }
    }

    /// The slot an admission made, or `nil` (recording an issue) when it was not admitted.
    private func slot(_ admission: ConnectionRegistry.Admission, shedding expected: CInt? = nil) -> ConnectionSlot? {
        guard case .admitted(let slot, let shed) = admission else {
            Issue.record("not admitted: \(admission)")
            return nil
        }
        #expect(shed == expected)
        return slot
    }

    /// At the limit, the connection waiting longest for a head makes room; one inside a request
    /// never does, and with no one waiting for a head, the newcomer is turned away.
    @Test func theLongestWaitingHeadIsShedAndRequestsAreNot() throws {
        let registry = ConnectionRegistry(limit: 2)
        let start = ContinuousClock.now
        let (inRequest, waiting, newcomer, last) = (try Pair(), try Pair(), try Pair(), try Pair())
        let busy = try #require(slot(registry.admit(inRequest.local, at: start)))
        #expect(busy.headArrived())
        let idle = try #require(slot(registry.admit(waiting.local, at: start + .seconds(1))))

        let fresh = try #require(slot(registry.admit(newcomer.local, at: start + .seconds(2)), shedding: waiting.local))
        #expect(idle.wasShed && waiting.isShutForReading)
        #expect(!idle.headArrived())
        idle.awaitingHead(since: start + .seconds(3))
        #expect(idle.wasShed)
        #expect(registry.count == 2)

        #expect(fresh.headArrived())
        guard case .full = registry.admit(last.local, at: start + .seconds(3)) else {
            Issue.record("admitted with every slot inside a request")
            return
        }
        #expect(!busy.wasShed && !inRequest.isShutForReading)

        registry.remove(idle)
        busy.awaitingHead(since: start + .seconds(4))
        _ = slot(registry.admit(last.local, at: start + .seconds(5)), shedding: inRequest.local)
    }
}
