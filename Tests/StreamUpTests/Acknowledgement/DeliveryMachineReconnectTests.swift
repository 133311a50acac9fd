import StreamUpTestSupport
import Testing

@testable import StreamUp

/// How long the delivery decisions wait after a failure, by whether the attempt reached the
/// receiver (`RetryPolicy.maxReconnectDelay`), on a manual clock. Full jitter is pinned to its
/// bound, so each wait is the longest the policy allows.
@Suite struct DeliveryMachineReconnectTests {
    typealias Machine = DeliveryMachine<ManualClock.Instant>
    let clock = ManualClock()
    let limits = SegmentLimits(maxBytes: 1000, maxDuration: .seconds(1))

    private func machine(reconnect: Duration?) -> Machine {
        var retry = RetryPolicy(maxRetries: nil)
        retry.maxReconnectDelay = reconnect
        return Machine(Machine.Configuration(limits: limits, retry: retry, resumable: false, keepsDeadLetters: false, random: { $0 }))
    }

    private let input = Machine.Input(acknowledged: 0, readable: true, inputEnded: false, end: 1000)

    /// Fails the segment from 0 `times` times with `result`, each retry after the wait the
    /// machine asks for; returns the waits.
    private func waits(_ machine: inout Machine, _ result: Machine.Result, times: Int) -> [Duration] {
        (0..<times).compactMap { _ in
            guard case .send(let exchange) = machine.next(input, now: clock.now) else { return nil }
            _ = machine.handle(result, of: exchange, now: clock.now)
            guard case .sleep(let until) = machine.next(input, now: clock.now) else { return nil }
            let wait = clock.now.duration(to: until)
            clock.advance(by: wait)
            return wait
        }
    }

    /// A receiver that is down (its connections refused: nothing of a request went out) is
    /// tried again at most `maxReconnectDelay` apart, however long it stays down, so delivery
    /// resumes within that bound of its return; the doubling still starts from `baseDelay`.
    @Test func aReceiverThatIsDownIsTriedAgainWithinTheReconnectBound() {
        var machine = machine(reconnect: .seconds(1))
        let refused = Machine.Result.failed(Machine.Failure(kind: .transport, message: "connection refused"), carried: 0..<0)
        let waits = waits(&machine, refused, times: 20)
        #expect(waits.count == 20)
        #expect(Array(waits.prefix(3)) == [.milliseconds(250), .milliseconds(500), .seconds(1)])
        #expect(waits.allSatisfy { $0 <= .seconds(1) }, "\(waits)")
    }

    /// A receiver that answers (503), and a connection that broke while it carried a body (the
    /// receiver was reached and may be overloaded), keep the full backoff up to `maxDelay`;
    /// without a reconnect bound, a refused connection does too.
    @Test func answersAndBrokenRequestsKeepTheFullBackoff() {
        let cap = RetryPolicy().maxDelay
        var answered = machine(reconnect: .seconds(1))
        let busy = Machine.Result.answered(Machine.Answer(status: 503), carried: 0..<100)
        #expect(waits(&answered, busy, times: 10).last == cap)

        var broken = machine(reconnect: .seconds(1))
        let cut = Machine.Result.failed(Machine.Failure(kind: .transport, message: "connection reset"), carried: 0..<100)
        #expect(waits(&broken, cut, times: 10).last == cap)

        var unbounded = machine(reconnect: nil)
        let refused = Machine.Result.failed(Machine.Failure(kind: .transport, message: "connection refused"), carried: 0..<0)
        #expect(waits(&unbounded, refused, times: 10).last == cap)
    }
}
