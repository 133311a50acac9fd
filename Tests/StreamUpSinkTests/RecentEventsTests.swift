import Testing

@testable import StreamUpSink

/// The bounded list behind `SinkServer.requests`.
struct RecentEventsTests {
    private func event(_ sequence: Int) -> SinkRequestEvent {
        SinkRequestEvent(
            sequence: sequence, method: "GET", path: "/", version: "HTTP/1.1", headers: [], trailers: [],
            bodyByteCount: 0, sha256: nil, body: nil, storedFile: nil, duration: .zero, status: 200,
            isComplete: true, peer: "", failure: nil)
    }

    /// Past the limit the oldest events are dropped, and order stays oldest first.
    @Test func oldestEventsAreDroppedPastTheLimit() {
        var recent = RecentEvents(limit: 3)
        for sequence in 1...7 {
            recent.append(event(sequence))
        }
        #expect(recent.events.map(\.sequence) == [5, 6, 7])
    }

    /// A zero limit keeps nothing.
    @Test func zeroLimitKeepsNothing() {
        var recent = RecentEvents(limit: 0)
        recent.append(event(1))
        #expect(recent.events.isEmpty)
    }
}
