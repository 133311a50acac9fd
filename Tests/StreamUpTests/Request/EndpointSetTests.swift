import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// The choice among several endpoints on a manual clock: failover stays on the first usable
/// one, balance goes round robin, a failing endpoint is set aside with a growing backoff and
/// probed again after it, and stream names keep each receiver's offsets free of gaps.
@Suite struct EndpointSetTests {
    typealias Endpoints = EndpointSet<ManualClock.Instant>
    typealias Machine = DeliveryMachine<ManualClock.Instant>
    let clock = ManualClock()
    let urls = ["http://a/", "http://b/", "http://c/"].map { URL(string: $0)! }

    private func endpoints(_ choice: EndpointChoice, count: Int = 3) -> Endpoints {
        var retry = RetryPolicy()
        retry.baseDelay = .milliseconds(250)
        retry.maxDelay = .seconds(30)
        // The set-aside time is between half the bound and the bound: `$0` picks the bound.
        return Endpoints(Array(urls.prefix(count)), choice: choice, retry: retry, random: { $0 })
    }

    /// Failover: every request to the first endpoint while it works; after its failure to the
    /// next, until its backoff is over; then the first is probed, set aside longer when the probe
    /// fails, and used again once it answers.
    @Test func failoverLeavesAFailingEndpointAndProbesItBack() {
        var set = endpoints(.failover)
        #expect(set.choose(now: clock.now) == 0)
        #expect(set.choose(now: clock.now) == 0)
        let used = set.succeeded(0, carried: 0..<10, now: clock.now)
        #expect(!used)
        let first = set.failed(0, now: clock.now)
        #expect(first.aside == .milliseconds(250) && first.first)
        #expect(set.hasUsable(besides: 0, now: clock.now))
        #expect(set.choose(now: clock.now) == 1)
        #expect(set.choose(now: clock.now) == 1)
        clock.advance(by: .milliseconds(249))
        #expect(set.choose(now: clock.now) == 1)
        clock.advance(by: .milliseconds(1))
        #expect(set.choose(now: clock.now) == 0, "the backoff is over: the next request probes it")
        let second = set.failed(0, now: clock.now)
        #expect(second.aside == .milliseconds(500) && !second.first)
        #expect(set.choose(now: clock.now) == 1)
        clock.advance(by: .milliseconds(500))
        #expect(set.choose(now: clock.now) == 0)
        let back = set.succeeded(0, carried: 10..<20, now: clock.now)
        #expect(back, "it is back")
        clock.advance(by: .milliseconds(1))
        let third = set.failed(0, now: clock.now)
        #expect(third.aside == .milliseconds(250) && third.first, "a success starts its backoff over")
    }

    /// Balance: round robin over the usable endpoints; a set-aside one is skipped until its
    /// time is over.
    @Test func balanceGoesRoundRobinOverUsableEndpoints() {
        var set = endpoints(.balance)
        #expect((0..<4).map { _ in set.choose(now: clock.now) } == [0, 1, 2, 0])
        _ = set.failed(1, now: clock.now)
        #expect((0..<4).map { _ in set.choose(now: clock.now) } == [2, 0, 2, 0])
        clock.advance(by: .milliseconds(250))
        #expect((0..<3).map { _ in set.choose(now: clock.now) } == [1, 2, 0])
    }

    /// With every endpoint set aside there is no one to hand the segment to: the delivery's own
    /// backoff waits, then the endpoint whose time ends first is tried.
    @Test func allSetAsideTriesTheOneThatComesBackFirst() {
        var set = endpoints(.failover, count: 2)
        _ = set.failed(0, now: clock.now)
        _ = set.failed(0, now: clock.now)
        _ = set.failed(1, now: clock.now)
        #expect(!set.hasUsable(besides: 1, now: clock.now))
        #expect(set.choose(now: clock.now) == 1, "b is set aside 250 ms, a 500 ms")
    }

    /// `Retry-After` sets an endpoint aside for as long as it asks.
    @Test func retryAfterSetsAside() {
        var set = endpoints(.failover)
        #expect(set.failed(0, retryAfter: "7", now: clock.now).aside == .seconds(7))
        clock.advance(by: .seconds(6))
        #expect(set.choose(now: clock.now) == 1)
        clock.advance(by: .seconds(1))
        #expect(set.choose(now: clock.now) == 0)
    }

    /// A request that continues what its endpoint acknowledged keeps that stretch's name; any
    /// other starts a stretch named by its first offset, counted from 0; a resend to the same
    /// endpoint after a lost answer gets the same name and offset (its receiver drops what it
    /// holds twice). A single endpoint always gets the stream's own offsets.
    @Test func streamNamesKeepEachReceiversOffsetsWithoutGaps() {
        var set = endpoints(.balance, count: 2)
        #expect(set.place(0, offset: 0) == (0, 0))
        _ = set.succeeded(0, carried: 0..<100, now: clock.now)
        #expect(set.place(0, offset: 100) == (0, 100))
        #expect(set.place(1, offset: 100) == (100, 0))
        _ = set.succeeded(1, carried: 100..<150, now: clock.now)
        #expect(set.place(1, offset: 150) == (100, 50))
        #expect(set.place(0, offset: 150) == (150, 0), "a continued 0..<100 would leave a gap")
        _ = set.failed(1, now: clock.now)
        #expect(set.place(1, offset: 150) == (100, 50), "a failure changes nothing acknowledged")
        _ = set.succeeded(0, carried: 150..<200, now: clock.now)
        #expect(set.place(0, offset: 200) == (150, 50))
        var single = endpoints(.failover, count: 1)
        #expect(single.place(0, offset: 4096) == (0, 4096))
        _ = single.succeeded(0, carried: 4096..<5000, now: clock.now)
        #expect(single.place(0, offset: 6000) == (0, 6000))
    }

    /// A segment that failed where another endpoint takes it is sent again at once, without a
    /// backoff and without a "delivery is failing" line (the endpoint has its own); it still
    /// counts as a retry, and with no other endpoint the backoff applies.
    @Test func aSegmentFailingElsewhereIsRetriedAtOnce() {
        var retry = RetryPolicy(maxRetries: 3)
        retry.baseDelay = .milliseconds(250)
        let limits = SegmentLimits(maxBytes: 1000, maxDuration: .seconds(1))
        var machine = Machine(Machine.Configuration(limits: limits, retry: retry, resumable: false, keepsDeadLetters: false, random: { $0 }))
        let input = Machine.Input(acknowledged: 0, readable: true, inputEnded: false, end: 0)
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        let failure = Machine.Result.failed(Machine.Failure(kind: .transport, message: "connection refused", endpoint: "http://a/"), carried: 0..<0)
        #expect(machine.isRetryable(failure))
        let effects = machine.handle(failure, of: exchange, now: clock.now, elsewhere: true)
        #expect(effects == [.notice(.retrying(reason: "http://a/: connection refused", attempt: 1, delay: .zero, first: false))])
        #expect(machine.next(input, now: clock.now) == .send(exchange))
        #expect(machine.retries == 1)
        let answer = Machine.Result.answered(Machine.Answer(status: 503, endpoint: "http://b/"), carried: 0..<100)
        let second = machine.handle(answer, of: exchange, now: clock.now)
        #expect(second == [.notice(.retrying(reason: "http://b/ answered 503", attempt: 2, delay: .milliseconds(500), first: true))])
        #expect(machine.next(input, now: clock.now) == .sleep(until: clock.now.advanced(by: .milliseconds(500))))
        #expect(!machine.isRetryable(.answered(Machine.Answer(status: 400), carried: 0..<1)))
        #expect(!machine.isRetryable(.answered(Machine.Answer(status: 200), carried: 0..<1)))
    }
}
