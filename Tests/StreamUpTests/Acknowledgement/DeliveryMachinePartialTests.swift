import StreamUpTestSupport
import Testing

@testable import StreamUp

/// Partial failures on a manual clock: refused records are reported before the acknowledgement
/// that frees them, never sent again; what the receiver did not process is sent again, at once
/// (Splunk after the invalid event) or after a backoff (Elasticsearch items answered 429).
@Suite struct DeliveryMachinePartialTests {
    typealias Machine = DeliveryMachine<ManualClock.Instant>
    let clock = ManualClock()
    let limits = SegmentLimits(maxBytes: 1000, maxDuration: .seconds(1))

    private func machine(retries: Int? = 3, deadLetters: Bool = false) -> Machine {
        var retry = RetryPolicy(maxRetries: retries)
        retry.baseDelay = .milliseconds(250)
        return Machine(Machine.Configuration(limits: limits, retry: retry, resumable: false, keepsDeadLetters: deadLetters, random: { $0 }))
    }

    private func input(acknowledged: Int = 0) -> Machine.Input {
        Machine.Input(acknowledged: acknowledged, readable: true, inputEnded: false, end: 0)
    }

    private func answer(_ status: Int, _ partial: Machine.Partial) -> Machine.Answer {
        Machine.Answer(status: status, partial: partial)
    }

    private func rejection(_ ranges: [Range<Int>], whole: Bool = false) -> Machine.RecordRejection {
        Machine.RecordRejection(records: ranges.map { .init(range: $0, reason: "bad") }, count: ranges.count, whole: whole, summary: "refused")
    }

    /// Elasticsearch `errors:true` (a 200): the refused documents are reported first, then the
    /// whole request is acknowledged and the stream goes on; no retry is counted.
    @Test func refusedRecordsAreReportedThenTheRequestIsAcknowledged() {
        var machine = machine()
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        let partial = Machine.Partial(rejection: rejection([10..<20, 40..<55]))
        let effects = machine.handle(.answered(answer(200, partial), carried: 0..<100), of: exchange, now: clock.now)
        #expect(effects == [.rejectRecords(rejection([10..<20, 40..<55])), .acknowledge(upTo: 100)])
        #expect(machine.next(input(acknowledged: 100), now: clock.now) == .send(.segment(from: 100, limits: limits)))
        #expect(machine.retries == 0 && machine.failures == 0)
    }

    /// Splunk code 6 (a 400) for event N: N is reported, the stream is acknowledged to its end,
    /// and the events after it go out at once in the next request.
    @Test func aSplunkInvalidEventIsRejectedAndTheEventsAfterItAreSentAtOnce() {
        var machine = machine()
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        let partial = Machine.Partial(rejection: rejection([30..<45]), unprocessedFrom: 45)
        let effects = machine.handle(.answered(answer(400, partial), carried: 0..<100), of: exchange, now: clock.now)
        #expect(effects == [.rejectRecords(rejection([30..<45])), .acknowledge(upTo: 45)])
        #expect(machine.next(input(acknowledged: 45), now: clock.now) == .send(.segment(from: 45, limits: limits)))
        #expect(machine.retries == 0)
    }

    /// Items answered 429: the documents before the first of them are settled (refused ones
    /// reported), the rest is sent again after a backoff, counted as a retry.
    @Test func overloadedItemsAreSentAgainAfterABackoff() {
        var machine = machine()
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        let partial = Machine.Partial(rejection: rejection([0..<10]), unprocessedFrom: 60, backoff: true)
        let effects = machine.handle(.answered(answer(200, partial), carried: 0..<100), of: exchange, now: clock.now)
        #expect(
            effects == [
                .rejectRecords(rejection([0..<10])), .acknowledge(upTo: 60),
                .notice(.retrying(reason: "the server answered 429", attempt: 1, delay: .milliseconds(250), first: true)),
            ])
        #expect(machine.next(input(acknowledged: 60), now: clock.now) == .sleep(until: clock.now.advanced(by: .milliseconds(250))))
        clock.advance(by: .milliseconds(250))
        #expect(machine.next(input(acknowledged: 60), now: clock.now) == .send(.segment(from: 60, limits: machine.limits)))
        #expect(machine.retries == 1)
    }

    /// A request none of whose records were processed waits a backoff even when the receiver
    /// did not ask for one, so a receiver that processes nothing causes no request storm; when
    /// retries run out, the rest is set aside (dead letters) or ends the upload on a 429.
    @Test func nothingProcessedBacksOffAndRunsOutOfRetries() {
        var kept = machine(retries: 0, deadLetters: true)
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        let nothing = Machine.Partial(unprocessedFrom: 0)
        #expect(kept.handle(.answered(answer(200, nothing), carried: 0..<100), of: exchange, now: clock.now).isEmpty)
        #expect(kept.next(input(), now: clock.now) == .deadLetter(from: 0, carried: 0..<100, limits: limits, reason: "the server answered 429"))

        var stopped = machine(retries: 1)
        _ = stopped.handle(.answered(answer(200, nothing), carried: 0..<100), of: exchange, now: clock.now)
        clock.advance(by: .seconds(1))
        #expect(stopped.next(input(), now: clock.now) == .send(exchange))
        _ = stopped.handle(.answered(answer(200, nothing), carried: 0..<100), of: exchange, now: clock.now)
        #expect(stopped.next(input(), now: clock.now) == .stop(.answer(status: 429)))
    }

    /// OTLP `partial_success` names no records: the whole request is reported (kept whole) and
    /// acknowledged, never sent again; a warning that refused nothing is only a notice.
    @Test func unidentifiedRefusalsKeepTheWholeRequestAndWarningsAreNotices() {
        var machine = machine()
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        let whole = Machine.RecordRejection(records: [.init(range: 0..<100, reason: "2 rejected")], count: 2, whole: true, summary: "2 rejected")
        #expect(
            machine.handle(.answered(answer(200, Machine.Partial(rejection: whole)), carried: 0..<100), of: exchange, now: clock.now)
                == [.rejectRecords(whole), .acknowledge(upTo: 100)])
        let next = Machine.Exchange.segment(from: 100, limits: machine.limits)
        #expect(
            machine.handle(.answered(answer(200, Machine.Partial(warning: "slow down")), carried: 100..<150), of: next, now: clock.now)
                == [.notice(.receiverWarning("slow down")), .acknowledge(upTo: 150)])
    }

    /// A partial answer during a failing spell is progress: the failures reset.
    @Test func aPartialAnswerIsProgress() {
        var machine = machine(retries: 1)
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        _ = machine.handle(.answered(Machine.Answer(status: 503), carried: 0..<100), of: exchange, now: clock.now)
        #expect(machine.failures == 1)
        clock.advance(by: .seconds(1))
        let partial = Machine.Partial(rejection: rejection([0..<10]), unprocessedFrom: 10)
        _ = machine.handle(.answered(answer(400, partial), carried: 0..<100), of: exchange, now: clock.now)
        #expect(machine.failures == 0)
        #expect(machine.next(input(acknowledged: 10), now: clock.now) == .send(.segment(from: 10, limits: machine.limits)))
    }
}
