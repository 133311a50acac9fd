import StreamUpTestSupport
import Testing

@testable import StreamUp

/// Several segments out at once on a manual clock: each is cut from the end of the one before,
/// answers come back in any order, the stream is acknowledged only up to the first segment not
/// answered 2xx, and a failed segment goes out again alone (the same cut), never the stored
/// ones after it.
@Suite struct DeliveryMachineWindowTests {
    typealias Machine = DeliveryMachine<ManualClock.Instant>
    let clock = ManualClock()
    let limits = SegmentLimits(maxBytes: 100, maxDuration: .seconds(1))

    private func machine(window: Int = 3, deadLetters: Bool = false, adaptive: Bool = false, retries: Int? = 5) -> Machine {
        var retry = RetryPolicy(maxRetries: retries)
        retry.baseDelay = .milliseconds(250)
        return Machine(
            Machine.Configuration(
                limits: limits, retry: retry, resumable: false, keepsDeadLetters: deadLetters, random: { $0 }, maxInFlight: window, adaptive: adaptive))
    }

    /// Records written up to `boundary`, the stream acknowledged up to `acknowledged`.
    private func input(acknowledged: Int = 0, boundary: Int = 1000, ended: Bool = false) -> Machine.Input {
        Machine.Input(acknowledged: acknowledged, readable: boundary > acknowledged || ended, inputEnded: ended, end: boundary, boundary: boundary)
    }

    private func segment(_ from: Int) -> Machine.Exchange { .segment(from: from, limits: limits) }

    private func ok(_ carried: Range<Int>) -> Machine.Result { .answered(Machine.Answer(status: 200), carried: carried) }

    /// Starts the segments at 0, 100, 200 (each cut 100 bytes) and checks the window is full.
    private func fill(_ machine: inout Machine) {
        for from in [0, 100, 200] {
            #expect(machine.next(input(), now: clock.now) == .send(segment(from)))
            #expect(machine.next(input(), now: clock.now) == .awaitAnswers, "the next segment starts where this one's cut ends")
            machine.cut(from: from, from..<from + 100)
        }
        #expect(machine.next(input(), now: clock.now) == .awaitAnswers)
        #expect(machine.inFlight == 3)
    }

    /// Three segments go out before any answer; answers out of order acknowledge only the
    /// contiguous prefix.
    @Test func answersOutOfOrderAcknowledgeInOrder() {
        var machine = machine()
        fill(&machine)
        #expect(machine.handle(ok(200..<300), of: segment(200), now: clock.now) == [])
        #expect(machine.acknowledged == 0)
        #expect(machine.handle(ok(0..<100), of: segment(0), now: clock.now) == [.acknowledge(upTo: 100)])
        #expect(machine.next(input(acknowledged: 100), now: clock.now) == .send(segment(300)), "room for one more")
        #expect(machine.handle(ok(100..<200), of: segment(100), now: clock.now) == [.acknowledge(upTo: 300)])
        #expect(machine.inFlight == 1)
    }

    /// A middle segment's 503: it goes out again after the backoff with the same start, the
    /// stored segment after it is not sent again, and no new segment is cut until the stream
    /// moves on.
    @Test func aFailedMiddleSegmentIsResentAloneAfterItsBackoff() {
        var machine = machine()
        fill(&machine)
        let failed = machine.handle(.answered(Machine.Answer(status: 503), carried: 100..<200), of: segment(100), now: clock.now)
        #expect(failed == [.notice(.retrying(reason: "the server answered 503", attempt: 1, delay: .milliseconds(250), first: true))])
        #expect(machine.handle(ok(200..<300), of: segment(200), now: clock.now) == [])
        #expect(machine.handle(ok(0..<100), of: segment(0), now: clock.now) == [.acknowledge(upTo: 100)])
        #expect(machine.next(input(acknowledged: 100), now: clock.now) == .sleep(until: clock.now.advanced(by: .milliseconds(250))))
        clock.advance(by: .milliseconds(250))
        #expect(machine.next(input(acknowledged: 100), now: clock.now) == .send(segment(100)))
        #expect(machine.next(input(acknowledged: 100), now: clock.now) == .awaitAnswers, "no new segment while a failure is not yet repaired")
        #expect(machine.handle(ok(100..<200), of: segment(100), now: clock.now) == [.acknowledge(upTo: 300)])
        #expect(machine.next(input(acknowledged: 300), now: clock.now) == .send(segment(300)))
        #expect(machine.resentBytes == 100)
    }

    /// A 413 to a middle segment: it goes smaller within its own range, in pieces, and the
    /// segments after it stand (they were sent already and are not cut again).
    @Test func tooLargeInTheMiddleSplitsThatSegmentOnly() {
        var machine = machine()
        fill(&machine)
        _ = machine.handle(.answered(Machine.Answer(status: 413), carried: 100..<200), of: segment(100), now: clock.now)
        #expect(machine.cap == 50)
        let smaller = SegmentLimits(maxBytes: 50, maxDuration: .seconds(1))
        #expect(machine.next(input(), now: clock.now) == .send(.segment(from: 100, limits: smaller)))
        machine.cut(from: 100, 100..<150)
        #expect(machine.next(input(), now: clock.now) == .send(.segment(from: 150, limits: smaller)), "the rest of its range")
        machine.cut(from: 150, 150..<200)
        #expect(machine.next(input(), now: clock.now) == .awaitAnswers)
        #expect(machine.handle(ok(0..<100), of: segment(0), now: clock.now) == [.acknowledge(upTo: 100)])
        #expect(machine.handle(ok(200..<300), of: segment(200), now: clock.now) == [])
        #expect(machine.handle(ok(150..<200), of: .segment(from: 150, limits: smaller), now: clock.now) == [])
        #expect(machine.handle(ok(100..<150), of: .segment(from: 100, limits: smaller), now: clock.now) == [.acknowledge(upTo: 300)])
    }

    /// Every segment out breaks, round after round (a body limit that closes the connection
    /// instead of answering 413): their resends take turns, and each one's third break in a
    /// row still makes segments smaller, so the stream gets through.
    @Test func segmentsThatBreakInTurnStillGoSmaller() {
        var machine = machine(retries: nil)
        fill(&machine)
        let broken = Machine.Failure(kind: .transport, message: "connection lost")
        for round in 1...Machine.breaksBeforeShrinking {
            #expect(machine.limits.maxBytes == 100, "round \(round)")
            for from in [0, 100, 200] {
                _ = machine.handle(.failed(broken, carried: from..<from + 100), of: segment(from), now: clock.now)
            }
            clock.advance(by: .seconds(60))
            var resent: [Machine.Exchange] = []
            while resent.count < 3, case .send(let exchange) = machine.next(input(), now: clock.now) {
                resent.append(exchange)
                if case .segment(let from, let limits) = exchange { machine.cut(from: from, from..<from + limits.maxBytes) }
            }
            if round < Machine.breaksBeforeShrinking {
                #expect(resent == [segment(0), segment(100), segment(200)], "round \(round)")
            }
        }
        #expect(machine.limits.maxBytes == 50)
    }

    /// Every segment out is answered 429, round after round, a minute apart (each request over
    /// a rate limit's burst): their resends take turns, and each one's second 429 still makes
    /// segments smaller, once.
    @Test func segmentsRefused429InTurnStillGoSmaller() {
        var machine = machine(retries: nil)
        fill(&machine)
        for round in 1...2 {
            for from in [0, 100, 200] {
                _ = machine.handle(.answered(Machine.Answer(status: 429), carried: from..<from + 100), of: segment(from), now: clock.now)
            }
            clock.advance(by: .seconds(60))
            var resent: [Machine.Exchange] = []
            while resent.count < 3, case .send(let exchange) = machine.next(input(), now: clock.now) {
                resent.append(exchange)
                if case .segment(let from, let limits) = exchange { machine.cut(from: from, from..<from + limits.maxBytes) }
            }
            if round == 1 {
                #expect(resent == [segment(0), segment(100), segment(200)], "round \(round)")
            }
        }
        #expect(machine.cap == 50)
    }

    /// A segment refused for good in the middle is set aside once the ones before it are
    /// acknowledged; the stored ones after it are acknowledged with it.
    @Test func aDeadLetterInTheMiddleWaitsForTheOnesBeforeIt() {
        var machine = machine(deadLetters: true)
        fill(&machine)
        #expect(machine.handle(.answered(Machine.Answer(status: 400), carried: 100..<200), of: segment(100), now: clock.now) == [])
        #expect(machine.handle(ok(200..<300), of: segment(200), now: clock.now) == [])
        #expect(machine.next(input(), now: clock.now) == .awaitAnswers)
        #expect(machine.handle(ok(0..<100), of: segment(0), now: clock.now) == [.acknowledge(upTo: 100)])
        let dead = machine.next(input(acknowledged: 100), now: clock.now)
        #expect(dead == .deadLetter(from: 100, carried: 100..<200, limits: limits, reason: "the server answered 400"))
        #expect(machine.deadLettered(upTo: 200) == [.acknowledge(upTo: 300)])
        #expect(machine.next(input(acknowledged: 300), now: clock.now) == .send(segment(300)))
    }

    /// A partial answer to a middle segment: the rest of it goes out at once within its range.
    @Test func aPartialAnswerInTheMiddleSendsTheRestWithinItsRange() {
        var machine = machine()
        fill(&machine)
        let partial = Machine.Partial(rejection: nil, unprocessedFrom: 140)
        _ = machine.handle(.answered(Machine.Answer(status: 400, partial: partial), carried: 100..<200), of: segment(100), now: clock.now)
        let rest = SegmentLimits(maxBytes: 60, maxDuration: .seconds(1))
        #expect(machine.next(input(), now: clock.now) == .send(.segment(from: 140, limits: rest)))
        #expect(machine.handle(ok(0..<100), of: segment(0), now: clock.now) == [.acknowledge(upTo: 140)])
        #expect(machine.handle(ok(200..<300), of: segment(200), now: clock.now) == [])
        #expect(machine.handle(ok(140..<200), of: .segment(from: 140, limits: rest), now: clock.now) == [.acknowledge(upTo: 300)])
    }

    /// No record past the last segment's end: wait for input from there, and finish only once
    /// everything out is acknowledged.
    @Test func theNextSegmentWaitsForRecordsPastTheLastCut() {
        var machine = machine()
        #expect(machine.next(input(boundary: 100), now: clock.now) == .send(segment(0)))
        machine.cut(from: 0, 0..<100)
        #expect(machine.next(input(boundary: 100), now: clock.now) == .waitForInput(from: 100))
        #expect(machine.next(input(boundary: 140), now: clock.now) == .waitForInput(from: 149), "beside one out: half a segment")
        #expect(machine.next(input(boundary: 100, ended: true), now: clock.now) == .awaitAnswers)
        #expect(machine.handle(ok(0..<100), of: segment(0), now: clock.now) == [.acknowledge(upTo: 100)])
        #expect(machine.next(input(acknowledged: 100, boundary: 100, ended: true), now: clock.now) == .finish)
    }

    /// Beside requests still out, a new segment goes only when half a segment (50 bytes here)
    /// waits, or the input has ended: at a pace one request at a time carries, a second
    /// request out only adds its wait. With nothing out, any record goes.
    @Test func aSecondSegmentGoesOnlyWhenOneAtATimeCannotKeepUp() {
        var machine = machine()
        #expect(machine.next(input(boundary: 40), now: clock.now) == .send(segment(0)))
        machine.cut(from: 0, 0..<40)
        #expect(machine.next(input(boundary: 60), now: clock.now) == .waitForInput(from: 89))
        #expect(machine.next(input(boundary: 89), now: clock.now) == .waitForInput(from: 89))
        #expect(machine.next(input(boundary: 90), now: clock.now) == .send(segment(40)))
        machine.cut(from: 40, 40..<90)
        #expect(machine.next(input(boundary: 100, ended: true), now: clock.now) == .send(segment(90)), "the input's end goes at once")
        var another = self.machine()
        #expect(another.next(input(boundary: 40), now: clock.now) == .send(segment(0)))
        another.cut(from: 0, 0..<40)
        #expect(another.handle(ok(0..<40), of: segment(0), now: clock.now) == [.acknowledge(upTo: 40)])
        #expect(another.next(input(acknowledged: 40, boundary: 60), now: clock.now) == .send(segment(40)), "nothing out: any record goes")
    }

    /// A window of one is one request at a time.
    @Test func aWindowOfOneSendsOneAtATime() {
        var machine = machine(window: 1)
        #expect(machine.next(input(), now: clock.now) == .send(segment(0)))
        machine.cut(from: 0, 0..<100)
        #expect(machine.next(input(), now: clock.now) == .awaitAnswers)
        #expect(machine.handle(ok(0..<100), of: segment(0), now: clock.now) == [.acknowledge(upTo: 100)])
        #expect(machine.next(input(acknowledged: 100), now: clock.now) == .send(segment(100)))
    }

    /// The adaptive window starts at one, grows by one per window of fast 2xx answers, halves
    /// on an overload (once per window of answers), and shrinks when answers slow down.
    @Test func theAdaptiveWindowGrowsOnFastAnswersAndShrinksOnOverload() {
        var window = ConcurrencyWindow(maximum: 8, adaptive: true)
        #expect(window.limit == 1)
        for _ in 0..<6 { window.answered(in: .milliseconds(50)) }
        #expect(window.limit == 4, "1 + 1 answer, 2 + 2, 3 + 3")
        window.overloaded()
        #expect(window.limit == 2)
        window.overloaded()
        #expect(window.limit == 2, "answers of requests sent before the decrease do not decrease it again")
        for _ in 0..<4 { window.answered(in: .milliseconds(50)) }
        window.answered(in: .milliseconds(400))
        #expect(window.limit < 3, "an answer far slower than usual shrinks it")
        var fixed = ConcurrencyWindow(maximum: 8, adaptive: false)
        fixed.overloaded()
        #expect(fixed.limit == 8)
    }

    /// Answer times are judged a window of answers at a time: in a full window of 8 against a
    /// receiver that answers in 50 ms, one answer 12 ms late (a transfer held up on a busy
    /// machine) leaves the window at 8; a whole window of answers 30 ms later halves it.
    @Test func oneSlowAnswerAmongSteadyOnesKeepsTheWindow() {
        var window = ConcurrencyWindow(maximum: 8, adaptive: true)
        for _ in 0..<(1 + 2 + 3 + 4 + 5 + 6 + 7 + 8) { window.answered(in: .milliseconds(50)) }
        #expect(window.limit == 8)
        for _ in 0..<7 { window.answered(in: .milliseconds(50)) }
        window.answered(in: .milliseconds(62))
        #expect(window.limit == 8, "one slow answer is noise")
        for _ in 0..<8 { window.answered(in: .milliseconds(80)) }
        #expect(window.limit == 4, "a window of slower answers is a receiver slowing down")
    }

    /// An adaptive machine starts with one segment out and takes more as answers come back.
    @Test func anAdaptiveMachineStartsWithOneSegmentOut() {
        var machine = machine(window: 4, adaptive: true)
        #expect(machine.next(input(), now: clock.now) == .send(segment(0)))
        machine.cut(from: 0, 0..<100)
        #expect(machine.next(input(), now: clock.now) == .awaitAnswers)
        _ = machine.handle(.answered(Machine.Answer(status: 200, took: .milliseconds(50)), carried: 0..<100), of: segment(0), now: clock.now)
        #expect(machine.next(input(acknowledged: 100), now: clock.now) == .send(segment(100)))
        machine.cut(from: 100, 100..<200)
        #expect(machine.next(input(acknowledged: 100), now: clock.now) == .send(segment(200)))
    }
}
