import Testing

@testable import StreamUpSink

/// The connection clocks as a pure value: instants in, expiries out, no sockets and no waiting.
@Suite struct ConnectionDeadlinesTests {
    private static let start = ContinuousClock.now
    private static let rate = SinkBodyRate(bytesPerSecond: 100, window: .seconds(4), grace: .seconds(2))

    private static func deadlines() -> ConnectionDeadlines {
        ConnectionDeadlines(idleTimeout: .seconds(60), headTimeout: .seconds(10), bodyRate: rate, start: start)
    }

    /// The first head is due from the connection's start, however steadily bytes come.
    @Test func theFirstHeadIsDueFromTheStartEvenWithBytesFlowing() {
        var clocks = Self.deadlines()
        for second in 1...9 {
            clocks.received(1, at: Self.start + .seconds(second))
        }
        #expect(clocks.expiry(at: Self.start + .seconds(9), progress: .inHead) == nil)
        #expect(clocks.wait(at: Self.start + .seconds(9), progress: .inHead) == .seconds(1))
        #expect(clocks.expiry(at: Self.start + .seconds(10), progress: .inHead) == .head)
    }

    /// Between requests only the idle clock runs; a later head is due from its first byte.
    @Test func aLaterHeadIsDueFromItsFirstByte() {
        var clocks = Self.deadlines()
        clocks.headArrived()
        clocks.messageEnded()
        let quiet = Self.start + .seconds(50)
        #expect(clocks.expiry(at: quiet, progress: .betweenMessages) == nil)
        clocks.received(1, at: quiet)
        clocks.messageStarted(at: quiet)
        #expect(clocks.expiry(at: quiet + .seconds(9), progress: .inHead) == nil)
        #expect(clocks.expiry(at: quiet + .seconds(10), progress: .inHead) == .head)
    }

    /// Credit is spent only on owed waits: waiting between chunks costs nothing.
    @Test func onlyOwedWaitsSpendCredit() {
        var clocks = Self.deadlines()
        clocks.headArrived()
        clocks.waited(.seconds(30), owed: false)
        #expect(clocks.credit == .seconds(2))
        clocks.waited(.milliseconds(1_500), owed: true)
        #expect(clocks.credit == .milliseconds(500))
        #expect(clocks.wait(at: Self.start, progress: .owingBody) == .milliseconds(500))
        #expect(clocks.wait(at: Self.start, progress: .betweenChunks) == .seconds(60))
        clocks.waited(.milliseconds(500), owed: true)
        #expect(clocks.expiry(at: Self.start, progress: .owingBody) == .bodyRate)
        #expect(clocks.expiry(at: Self.start, progress: .betweenChunks) == nil)
    }

    /// Bytes earn credit at 1 / rate seconds each, never above the window.
    @Test func bytesEarnCreditUpToTheWindow() {
        var clocks = Self.deadlines()
        clocks.headArrived()
        clocks.received(100, at: Self.start)
        #expect(clocks.credit == .seconds(3))
        clocks.received(10_000, at: Self.start)
        #expect(clocks.credit == .seconds(4))
        // A new request starts again from the grace.
        clocks.headArrived()
        #expect(clocks.credit == .seconds(2))
    }

    /// A pause of the sink's own (an injected read throttle) moves the idle and head clocks.
    @Test func theSinksOwnPausesAreNotTheClients() {
        var clocks = Self.deadlines()
        clocks.sinkPaused(for: .seconds(100))
        #expect(clocks.expiry(at: Self.start + .seconds(100), progress: .inHead) == nil)
        #expect(clocks.expiry(at: Self.start + .seconds(110), progress: .inHead) == .head)
        #expect(clocks.expiry(at: Self.start + .seconds(160), progress: .betweenChunks) == .idle)
    }

    /// Silence expires the idle clock in any state.
    @Test func silenceExpiresTheIdleClock() {
        var clocks = Self.deadlines()
        clocks.headArrived()
        #expect(clocks.expiry(at: Self.start + .seconds(60), progress: .betweenChunks) == .idle)
    }
}
