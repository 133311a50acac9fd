#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import StreamUpSink

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

    /// At the limit, the connection waiting longest for a head makes room; one inside a request
    /// never does, and with no one waiting for a head, the newcomer is turned away.
    @Test func theLongestWaitingHeadIsShedAndRequestsAreNot() throws {
        let registry = ConnectionRegistry(limit: 2)
        let start = ContinuousClock.now
        let (inRequest, waiting, newcomer, last) = (try Pair(), try Pair(), try Pair(), try Pair())
        #expect(registry.admit(inRequest.local, at: start) == .admitted)
        #expect(registry.headArrived(inRequest.local))
        #expect(registry.admit(waiting.local, at: start + .seconds(1)) == .admitted)

        #expect(registry.admit(newcomer.local, at: start + .seconds(2)) == .admittedByShedding(shed: waiting.local))
        #expect(registry.wasShed(waiting.local) && waiting.isShutForReading)
        #expect(!registry.headArrived(waiting.local))
        #expect(registry.count == 2)

        #expect(registry.headArrived(newcomer.local))
        #expect(registry.admit(last.local, at: start + .seconds(3)) == .full)
        #expect(!registry.wasShed(inRequest.local) && !inRequest.isShutForReading)

        registry.remove(waiting.local)
        registry.awaitingHead(inRequest.local, since: start + .seconds(4))
        #expect(registry.admit(last.local, at: start + .seconds(5)) == .admittedByShedding(shed: inRequest.local))
    }
}
