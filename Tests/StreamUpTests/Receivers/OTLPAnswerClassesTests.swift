import StreamUpTestSupport
import Testing

@testable import StreamUp

/// What each class of OTLP/HTTP answer does to a segment under the preset's retry policy
/// (``Receiver/deliveryOptions(_:)``), on the manual clock: the specification retries 429, 502,
/// 503 and 504 (with `Retry-After` and the backoff) and "All other 4xx or 5xx response status
/// codes MUST NOT be retried" (https://opentelemetry.io/docs/specs/otlp/#retryable-response-codes).
@Suite struct OTLPAnswerClassesTests {
    typealias Machine = DeliveryMachine<ManualClock.Instant>
    let clock = ManualClock()
    let limits = SegmentLimits(maxBytes: 1000, maxDuration: .seconds(1))

    private func machine(_ receiver: Receiver, deadLetters: Bool = false) -> Machine {
        var retry = receiver.deliveryOptions().retry
        retry.baseDelay = .milliseconds(250)
        return Machine(Machine.Configuration(limits: limits, retry: retry, resumable: false, keepsDeadLetters: deadLetters, random: { $0 }))
    }

    private func input(acknowledged: Int = 0) -> Machine.Input {
        Machine.Input(acknowledged: acknowledged, readable: true, inputEnded: false, end: 0)
    }

    /// 429, 502, 503 and 504 are sent again after the backoff, or after `Retry-After`.
    @Test(arguments: [Receiver.otlp, .otlpJSON], [429, 502, 503, 504])
    func retryableAnswersAreSentAgain(receiver: Receiver, status: Int) {
        var machine = machine(receiver)
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        let started = clock.now
        let effects = machine.handle(.answered(Machine.Answer(status: status, retryAfter: "2"), carried: 0..<100), of: exchange, now: clock.now)
        #expect(effects == [.notice(.retrying(reason: "the server answered \(status)", attempt: 1, delay: .seconds(2), first: true))])
        #expect(machine.next(input(), now: clock.now) == .sleep(until: started.advanced(by: .seconds(2))))
        clock.advance(by: .seconds(2))
        #expect(machine.next(input(), now: clock.now) == .send(exchange))
    }

    /// Any other 4xx or 5xx is final for its request: without dead letters the stream stops
    /// there (no retry); with them the segment is set aside and the stream goes on after it.
    @Test(arguments: [Receiver.otlp, .otlpJSON], [400, 401, 408, 500, 501, 505])
    func otherFailuresAreFinalForTheirRequest(receiver: Receiver, status: Int) {
        var stopping = machine(receiver)
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        #expect(stopping.handle(.answered(Machine.Answer(status: status), carried: 0..<100), of: exchange, now: clock.now).isEmpty)
        #expect(stopping.next(input(), now: clock.now) == .stop(.answer(status: status)))
        #expect(stopping.retries == 0)

        var keeping = machine(receiver, deadLetters: true)
        _ = keeping.handle(.answered(Machine.Answer(status: status), carried: 0..<100), of: exchange, now: clock.now)
        #expect(keeping.next(input(), now: clock.now) == .deadLetter(from: 0, carried: 0..<100, limits: limits, reason: "the server answered \(status)"))
        keeping.deadLettered(upTo: 100)
        #expect(keeping.next(input(acknowledged: 100), now: clock.now) == .send(.segment(from: 100, limits: limits)))
    }
}
