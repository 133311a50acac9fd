import StreamUpTestSupport
import Testing

@testable import StreamUp

/// The delivery decisions on a manual clock: retries and backoff, `Retry-After`, smaller
/// segments after broken connections and 413, dead letters, the failing/recovered notices, and
/// the resumable sequence. No sockets, no sleeping: each test takes microseconds.
@Suite struct DeliveryMachineTests {
    typealias Machine = DeliveryMachine<ManualClock.Instant>
    let clock = ManualClock()
    let limits = SegmentLimits(maxBytes: 1000, maxDuration: .seconds(1))

    private func machine(retries: Int? = 3, resumable: Bool = false, deadLetters: Bool = false, maxRetryTime: Duration? = nil) -> Machine {
        var retry = RetryPolicy(maxRetries: retries, maxRetryTime: maxRetryTime)
        retry.baseDelay = .milliseconds(250)
        // Full jitter picks the bound itself, so waits are exact.
        return Machine(Machine.Configuration(limits: limits, retry: retry, resumable: resumable, keepsDeadLetters: deadLetters, random: { $0 }))
    }

    private func input(acknowledged: Int = 0, readable: Bool = true, ended: Bool = false, end: Int = 0) -> Machine.Input {
        Machine.Input(acknowledged: acknowledged, readable: readable, inputEnded: ended, end: end)
    }

    private func answer(_ status: Int, retryAfter: String? = nil) -> Machine.Answer {
        Machine.Answer(status: status, retryAfter: retryAfter)
    }

    private let cut = Machine.Failure(kind: .transport, message: "connection lost")

    /// A quiet input waits; a record makes a segment from the acknowledged offset; a 2xx
    /// acknowledges what it carried.
    @Test func aSegmentGoesOutAndIsAcknowledged() {
        var machine = machine()
        #expect(machine.next(input(readable: false), now: clock.now) == .waitForInput(from: 0))
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        #expect(machine.next(input(), now: clock.now) == .send(exchange))
        #expect(machine.handle(.answered(answer(200), carried: 0..<120), of: exchange, now: clock.now) == [.acknowledge(upTo: 120)])
        #expect(machine.next(input(acknowledged: 120, ended: true, end: 120), now: clock.now) == .finish)
    }

    /// An empty input sends nothing (most receivers refuse an empty request: Loki's "No data",
    /// Fluent Bit's 400): the upload is done at once.
    @Test func anEmptyInputSendsNothing() {
        var machine = machine()
        #expect(machine.next(input(readable: false, ended: true, end: 0), now: clock.now) == .finish)
    }

    /// A 503 is retried after a backoff that doubles per failure; `Retry-After` wins over it.
    @Test func failuresBackOffAndRetryAfterIsHonoured() {
        var machine = machine(retries: 5)
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        let started = clock.now
        let first = machine.handle(.answered(answer(503), carried: 0..<100), of: exchange, now: clock.now)
        #expect(first == [.notice(.retrying(reason: "the server answered 503", attempt: 1, delay: .milliseconds(250), first: true))])
        #expect(machine.next(input(), now: clock.now) == .sleep(until: started.advanced(by: .milliseconds(250))))
        clock.advance(by: .milliseconds(250))
        #expect(machine.next(input(), now: clock.now) == .send(exchange))
        let second = machine.handle(.answered(answer(503), carried: 0..<100), of: exchange, now: clock.now)
        #expect(second == [.notice(.retrying(reason: "the server answered 503", attempt: 2, delay: .milliseconds(500), first: false))])
        clock.advance(by: .milliseconds(500))
        _ = machine.next(input(), now: clock.now)
        _ = machine.handle(.answered(answer(429, retryAfter: "3"), carried: 0..<100), of: exchange, now: clock.now)
        #expect(machine.next(input(), now: clock.now) == .sleep(until: clock.now.advanced(by: .seconds(3))))
        #expect(machine.retries == 3 && machine.resentBytes == 200)
    }

    /// Retries run out: the last answer is the outcome; without any answer, the failure is.
    @Test func retriesRunOutOnTheLastAnswerOrFailure() {
        var machine = machine(retries: 1)
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        _ = machine.handle(.answered(answer(500), carried: 0..<10), of: exchange, now: clock.now)
        clock.advance(by: .seconds(1))
        _ = machine.next(input(), now: clock.now)
        _ = machine.handle(.answered(answer(502), carried: 0..<10), of: exchange, now: clock.now)
        #expect(machine.next(input(), now: clock.now) == .stop(.answer(status: 502)))

        var refused = self.machine(retries: 0)
        _ = refused.handle(.failed(Machine.Failure(kind: .transport, message: "refused"), carried: 0..<0), of: exchange, now: clock.now)
        #expect(refused.next(input(), now: clock.now) == .stop(.failure(Machine.Failure(kind: .transport, message: "refused"))))
    }

    /// `maxRetryTime` gives up once failures have gone on that long without progress.
    @Test func retryTimeLimitGivesUp() {
        var machine = machine(retries: nil, maxRetryTime: .seconds(10))
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        for _ in 0..<4 {
            _ = machine.handle(.failed(cut, carried: 0..<0), of: exchange, now: clock.now)
            clock.advance(by: .seconds(3))
            #expect(machine.next(input(), now: clock.now) == .send(exchange))
        }
        _ = machine.handle(.failed(cut, carried: 0..<0), of: exchange, now: clock.now)
        #expect(machine.next(input(), now: clock.now) == .stop(.failure(cut)))
    }

    /// A 4xx is final: without dead letters the upload stops at once, no retry.
    @Test func aClientErrorStopsAtOnce() {
        var machine = machine()
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        #expect(machine.handle(.answered(answer(400), carried: 0..<100), of: exchange, now: clock.now).isEmpty)
        #expect(machine.next(input(), now: clock.now) == .stop(.answer(status: 400)))
        #expect(machine.retries == 0)
    }

    /// With dead letters, a refused segment is set aside and the stream goes on after it.
    @Test func aRefusedSegmentBecomesADeadLetterAndTheStreamGoesOn() {
        var machine = machine(deadLetters: true)
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        _ = machine.handle(.answered(answer(400), carried: 0..<100), of: exchange, now: clock.now)
        let deadLetter = Machine.Action.deadLetter(from: 0, carried: 0..<100, limits: limits, reason: "the server answered 400")
        #expect(machine.next(input(), now: clock.now) == deadLetter)
        machine.deadLettered(upTo: 100)
        #expect(machine.next(input(acknowledged: 100), now: clock.now) == .send(.segment(from: 100, limits: limits)))
    }

    /// Retries that run out also set the segment aside, with dead letters.
    @Test func exhaustedRetriesSetTheSegmentAside() {
        var machine = machine(retries: 0, deadLetters: true)
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        _ = machine.handle(.answered(answer(503), carried: 0..<50), of: exchange, now: clock.now)
        #expect(machine.next(input(), now: clock.now) == .deadLetter(from: 0, carried: 0..<50, limits: limits, reason: "the server answered 503"))
    }

    /// A broken connection (a lost answer looks the same) sends the same segment again, at
    /// the same size: the receiver may hold it, and only an identical resend is one it can drop.
    @Test func aBrokenConnectionSendsTheSameSegmentAgain() {
        var machine = machine(retries: nil)
        let first = Machine.Exchange.segment(from: 0, limits: limits)
        _ = machine.handle(.failed(cut, carried: 0..<600), of: first, now: clock.now)
        clock.advance(by: .seconds(1))
        #expect(machine.next(input(), now: clock.now) == .send(first))
        _ = machine.handle(.failed(cut, carried: 0..<600), of: first, now: clock.now)
        clock.advance(by: .seconds(3))
        #expect(machine.next(input(), now: clock.now) == .send(first))
        #expect(machine.limits.maxBytes == 1000)
    }

    /// A link that cuts every request (a proxy's body limit that closes the connection instead
    /// of answering 413): after the same segment broke three times in a row, sent identically
    /// each time, it goes smaller, so the stream still gets through, and stays smaller after
    /// successes (growing back would meet the same limit, and such a receiver keeps part of
    /// each request it drops). One line says so.
    @Test func aSegmentBrokenThreeTimesInARowGoesSmallerForGood() {
        var machine = machine(retries: nil)
        let first = Machine.Exchange.segment(from: 0, limits: limits)
        var notices: [Machine.Effect] = []
        for attempt in 1...Machine.breaksBeforeShrinking {
            notices += machine.handle(.failed(cut, carried: 0..<1000), of: first, now: clock.now).filter {
                if case .notice(.segmentShrunk) = $0 { true } else { false }
            }
            clock.advance(by: .seconds(60))
            if attempt < Machine.breaksBeforeShrinking {
                #expect(machine.next(input(), now: clock.now) == .send(first), "attempt \(attempt)")
            }
        }
        #expect(machine.limits.maxBytes == 500)
        #expect(notices == [.notice(.segmentShrunk(toBytes: 500, reason: "the connection broke 3 times in a row during a request of 1000 bytes"))])
        for start in stride(from: 0, to: 2000, by: 500) {
            _ = machine.handle(.answered(answer(200), carried: start..<start + 500), of: .segment(from: start, limits: machine.limits), now: clock.now)
        }
        #expect(machine.limits.maxBytes == 500, "successes do not grow it back to the size that broke")
    }

    /// An answer says nothing about size (a 503 is the server's load), and a failure before any
    /// byte went out neither: the segment stays as it was.
    @Test func answersAndRefusedConnectionsDoNotShrinkSegments() {
        var machine = machine()
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        _ = machine.handle(.answered(answer(503), carried: 0..<800), of: exchange, now: clock.now)
        _ = machine.handle(.failed(Machine.Failure(kind: .transport, message: "refused"), carried: 0..<0), of: exchange, now: clock.now)
        #expect(machine.limits.maxBytes == 1000)
    }

    /// 413 makes every later segment smaller, for good, down to one record at least: the size
    /// halves below what the refused request carried.
    @Test func tooLargeLowersTheSegmentSizeForGood() {
        var machine = machine(deadLetters: true)
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        #expect(
            machine.handle(.answered(answer(413), carried: 0..<1000), of: exchange, now: clock.now)
                == [.notice(.segmentShrunk(toBytes: 500, reason: "the server answered 413 (too large)"))])
        #expect(machine.retries == 0)
        _ = machine.handle(.answered(answer(200), carried: 0..<500), of: .segment(from: 0, limits: machine.limits), now: clock.now)
        #expect(machine.limits.maxBytes == 500, "a 413 cap does not grow back")
    }

    /// A request over its segment size is one record alone (the plan sends a longer first
    /// record whole): a 413 to it is final for that record, whole, and does not lower the
    /// segment size; the segments after it grow back to the cap (they used to shrink to one
    /// byte, then carry one record each).
    @Test func aRecordTooLargeForAnyRequestIsSetAsideWholeAndSegmentsGoOn() {
        var machine = machine(deadLetters: true)
        _ = machine.handle(.answered(answer(413), carried: 0..<1000), of: .segment(from: 0, limits: limits), now: clock.now)
        _ = machine.handle(.answered(answer(200), carried: 0..<400), of: .segment(from: 0, limits: machine.limits), now: clock.now)
        // The next record, 3,000 bytes, goes alone in a segment of at most 500.
        let lone = Machine.Exchange.segment(from: 400, limits: machine.limits)
        #expect(machine.next(input(acknowledged: 400), now: clock.now) == .send(lone))
        #expect(machine.handle(.answered(answer(413), carried: 400..<3400), of: lone, now: clock.now) == [])
        let reason = "the server answered 413 (too large) to a request of one record of 3000 bytes alone; no smaller request can hold it"
        #expect(machine.next(input(acknowledged: 400), now: clock.now) == .deadLetter(from: 400, carried: 400..<3400, limits: machine.limits, reason: reason))
        machine.deadLettered(upTo: 3400)
        #expect(machine.limits.maxBytes == 500 && machine.cap == 500, "the record says nothing of the records after it")
        #expect(machine.next(input(acknowledged: 3400), now: clock.now) == .send(.segment(from: 3400, limits: machine.limits)))
        // 413 after 413, with records of 100 bytes: the requests shrink until one carries a
        // single record over its size, and that one is final (it used to go on to 1 byte).
        var shrinking = self.machine(deadLetters: false)
        var requests = 0
        while case .send(let exchange) = shrinking.next(input(), now: clock.now), requests < 20 {
            requests += 1
            _ = shrinking.handle(.answered(answer(413), carried: 0..<max(100, shrinking.limits.maxBytes)), of: exchange, now: clock.now)
        }
        #expect(shrinking.next(input(), now: clock.now) == .stop(.answer(status: 413)))
        #expect(requests == 5 && shrinking.cap == 62)
    }

    /// Without dead letters, a record too large for any request stops the upload on that
    /// answer, with one line that says why.
    @Test func aRecordTooLargeStopsWithoutDeadLetters() {
        var machine = machine(deadLetters: false)
        let lone = Machine.Exchange.segment(from: 0, limits: limits)
        let effects = machine.handle(.answered(answer(413), carried: 0..<5000), of: lone, now: clock.now)
        #expect(
            effects == [
                .notice(.stopping(reason: "the server answered 413 (too large) to a request of one record of 5000 bytes alone; no smaller request can hold it"))
            ])
        #expect(machine.next(input(), now: clock.now) == .stop(.answer(status: 413)))
        #expect(machine.limits.maxBytes == 1000)
    }

    /// A 429 is retried after `Retry-After`; a second one in a row to the same segment means
    /// a rate limit's burst the request may never pass: it shrinks like a 413. A success ends
    /// that, and a lone record cannot shrink (it is retried until the budget runs out).
    @Test func aSecond429InARowShrinksTheSegment() {
        var machine = machine(retries: 10)
        let first = Machine.Exchange.segment(from: 0, limits: limits)
        #expect(
            machine.handle(.answered(answer(429, retryAfter: "2"), carried: 0..<1000), of: first, now: clock.now)
                == [.notice(.retrying(reason: "the server answered 429", attempt: 1, delay: .seconds(2), first: true))])
        #expect(machine.limits.maxBytes == 1000, "one 429 may be a passing rate limit")
        clock.advance(by: .seconds(2))
        #expect(machine.next(input(), now: clock.now) == .send(first))
        #expect(
            machine.handle(.answered(answer(429, retryAfter: "2"), carried: 0..<1000), of: first, now: clock.now) == [
                .notice(.segmentShrunk(toBytes: 500, reason: "the server answered 429 (too many requests) twice to a request of 1000 bytes")),
                .notice(.retrying(reason: "the server answered 429", attempt: 2, delay: .seconds(2), first: false)),
            ])
        #expect(machine.next(input(), now: clock.now) == .sleep(until: clock.now.advanced(by: .seconds(2))), "Retry-After is still honoured")
        clock.advance(by: .seconds(2))
        let smaller = Machine.Exchange.segment(from: 0, limits: machine.limits)
        #expect(machine.next(input(), now: clock.now) == .send(smaller))
        _ = machine.handle(.answered(answer(204), carried: 0..<500), of: smaller, now: clock.now)
        _ = machine.handle(.answered(answer(429), carried: 500..<1000), of: .segment(from: 500, limits: machine.limits), now: clock.now)
        #expect(machine.limits.maxBytes == 500, "after a success, one 429 shrinks nothing")
        var lone = self.machine(retries: 10)
        for _ in 0..<3 {
            _ = lone.handle(.answered(answer(429), carried: 0..<3000), of: .segment(from: 0, limits: limits), now: clock.now)
        }
        #expect(lone.limits.maxBytes == 1000 && lone.failures == 3)
    }

    /// A request-rate limit (nginx `limit_req` with `limit_req_status 429`, no Retry-After)
    /// refuses the quick retries after a 429 too, whatever their size: shrinking for that made
    /// every later request smaller and so more numerous, down to one record a request (seen in
    /// a trial, 2026-11-25: 75-byte requests at 2 a second). Only a 429 that still comes a
    /// second or more after the first to the same segment, when any per-second window has
    /// passed, is taken for the request's size.
    @Test func a429WithinASecondOfTheFirstShrinksNothing() {
        var machine = machine(retries: 10)
        let first = Machine.Exchange.segment(from: 0, limits: limits)
        for _ in 0..<3 {
            _ = machine.handle(.answered(answer(429), carried: 0..<1000), of: first, now: clock.now)
            clock.advance(by: .milliseconds(300))
        }
        #expect(machine.limits.maxBytes == 1000, "429s within 0.9 s of the first shrank the segment")
        clock.advance(by: .milliseconds(100))
        _ = machine.handle(.answered(answer(429), carried: 0..<1000), of: first, now: clock.now)
        #expect(machine.limits.maxBytes == 500, "a 429 a second after the first is one for the size")
    }

    /// A refusal the receiver's reader knows for permanent (a ClickHouse 500 for an unknown
    /// column) is final at once, and its reason carries the answer's first line.
    @Test func aPermanentRefusalIsFinalAndSaysWhy() {
        var machine = machine(retries: 10, deadLetters: true)
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        var refusal = answer(500)
        refusal.firstLine = "Code: 16. DB::Exception: No such column nosuch in table logs"
        refusal.permanent = true
        #expect(machine.handle(.answered(refusal, carried: 0..<100), of: exchange, now: clock.now) == [])
        #expect(
            machine.next(input(), now: clock.now)
                == .deadLetter(
                    from: 0, carried: 0..<100, limits: limits, reason: "the server answered 500: Code: 16. DB::Exception: No such column nosuch in table logs"))
        var transient = self.machine(retries: 10)
        refusal.permanent = false
        let effects = transient.handle(.answered(refusal, carried: 0..<100), of: exchange, now: clock.now)
        #expect(
            effects == [
                .notice(
                    .retrying(
                        reason: "the server answered 500: Code: 16. DB::Exception: No such column nosuch in table logs", attempt: 1, delay: .milliseconds(250),
                        first: true))
            ])
    }

    /// A flaky link gets one "failing" notice and one "recovered" notice: the spell ends only
    /// once a success comes ten seconds after the last failure (or the upload ends).
    @Test func aFailingSpellIsReportedOnceAndItsRecoveryOnce() {
        var machine = machine(retries: nil)
        var offset = 0
        var notices: [Machine.Notice] = []
        func send(_ result: (Int) -> Machine.Result) {
            let effects = machine.handle(result(offset), of: .segment(from: offset, limits: machine.limits), now: clock.now)
            for case .notice(let notice) in effects { notices.append(notice) }
            for case .acknowledge(let end) in effects { offset = end }
        }
        for _ in 0..<3 {
            send { .failed(cut, carried: $0..<($0 + 100)) }
            clock.advance(by: .seconds(1))
            send { .answered(answer(200), carried: $0..<($0 + 100)) }
            clock.advance(by: .seconds(1))
        }
        #expect(notices.filter { if case .retrying(_, _, _, true) = $0 { true } else { false } }.count == 1)
        #expect(!notices.contains { if case .recovered = $0 { true } else { false } })
        clock.advance(by: .seconds(10))
        send { .answered(answer(200), carried: $0..<($0 + 100)) }
        #expect(notices.last == .recovered(failedAttempts: 3, resentBytes: 300, after: .seconds(5)))
    }

    /// "Recovered over T" says how long delivery failed: from the first failure to the first
    /// success after the last one (a 4 s outage reads 4 s, not the 1 s between its failures).
    @Test func aRecoverySaysHowLongTheOutageLasted() {
        var machine = machine(retries: nil)
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        let refused = Machine.Failure(kind: .transport, message: "connection refused")
        var notices: [Machine.Notice] = []
        func handle(_ result: Machine.Result) {
            for case .notice(let notice) in machine.handle(result, of: exchange, now: clock.now) { notices.append(notice) }
        }
        handle(.failed(refused, carried: 0..<0))
        clock.advance(by: .seconds(1))
        handle(.failed(refused, carried: 0..<0))
        clock.advance(by: .seconds(3))
        handle(.answered(answer(200), carried: 0..<0))
        clock.advance(by: .seconds(20))
        handle(.answered(answer(200), carried: 0..<0))
        #expect(notices.last == .recovered(failedAttempts: 2, resentBytes: 0, after: .seconds(4)))
    }

    /// Retries for ever (the CLI's default) ride out an outage of any length: no wait is longer
    /// than the 30 s cap, a line says how long it has been failing about once a minute, and
    /// the first success after it says it recovered.
    @Test func anOutageOfAnyLengthIsRiddenOutAndReportedAboutOnceAMinute() {
        var machine = machine(retries: nil)
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        let refused = Machine.Failure(kind: .transport, message: "connection refused")
        let started = clock.now
        var still: [Duration] = []
        var firsts = 0
        // Two hours of refused connections.
        while started.duration(to: clock.now) < .seconds(7200) {
            #expect(machine.next(input(), now: clock.now) == .send(exchange))
            for case .notice(let notice) in machine.handle(.failed(refused, carried: 0..<0), of: exchange, now: clock.now) {
                switch notice {
                case .retrying(_, _, let delay, let first):
                    #expect(delay <= .seconds(30))
                    if first { firsts += 1 }
                case .stillFailing(let reason, _, let failingFor):
                    #expect(reason == "connection refused")
                    still.append(failingFor)
                default:
                    Issue.record("unexpected \(notice)")
                }
            }
            guard case .sleep(let until) = machine.next(input(), now: clock.now) else {
                Issue.record("no backoff after a failure")
                return
            }
            clock.advance(by: clock.now.duration(to: until))
        }
        #expect(firsts == 1)
        // One line a minute, give or take the backoff (at most 30 s) between attempts.
        #expect(still.count >= 80 && still.count <= 120, "\(still.count) lines in two hours")
        for (earlier, later) in zip(still, still.dropFirst()) {
            #expect(later - earlier >= .seconds(60) && later - earlier <= .seconds(90))
        }
        #expect(machine.next(input(), now: clock.now) == .send(exchange))
        let recovered = machine.handle(.answered(answer(200), carried: 0..<10), of: exchange, now: clock.now)
        #expect(recovered.contains(.acknowledge(upTo: 10)))
        #expect(recovered.contains { if case .notice(.recovered) = $0 { true } else { false } })
    }

    /// The recovery counts as "sent again" only bytes an earlier attempt may have stored: a
    /// 429 (or any refusal) stored nothing; a lost connection or a 5xx may have.
    @Test func onlyResendsOfAttemptsThatMayHaveStoredCountAsSentAgain() {
        func recovery(after failure: Machine.Result) -> Machine.Notice? {
            var machine = machine(retries: nil)
            let exchange = Machine.Exchange.segment(from: 0, limits: limits)
            _ = machine.handle(failure, of: exchange, now: clock.now)
            clock.advance(by: .seconds(20))
            _ = machine.next(input(), now: clock.now)
            let effects = machine.handle(.answered(answer(200), carried: 0..<100), of: exchange, now: clock.now)
            return effects.compactMap { if case .notice(let notice) = $0 { notice } else { nil } }.first
        }
        #expect(recovery(after: .answered(answer(429), carried: 0..<100)) == .recovered(failedAttempts: 1, resentBytes: 0, after: .seconds(20)))
        #expect(recovery(after: .answered(answer(408), carried: 0..<100)) == .recovered(failedAttempts: 1, resentBytes: 0, after: .seconds(20)))
        #expect(recovery(after: .answered(answer(502), carried: 0..<100)) == .recovered(failedAttempts: 1, resentBytes: 100, after: .seconds(20)))
        #expect(recovery(after: .failed(cut, carried: 0..<100)) == .recovered(failedAttempts: 1, resentBytes: 100, after: .seconds(20)))
    }

    /// A 2xx that came before the server had the whole segment is retried like a lost
    /// connection, but the segment keeps its size (a smaller one could sit whole in socket
    /// buffers and hide the early answer); after three resends, the failure is final.
    @Test func anEarlyAnswerIsResentAtFullSizeThenFinal() {
        var machine = machine(retries: nil)
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        let early = Machine.Failure(kind: .earlyAnswer, message: "the server answered 200 before the request body ended")
        for attempt in 1...3 {
            let effects = machine.handle(.failed(early, carried: 0..<1000), of: exchange, now: clock.now)
            #expect(effects.contains { if case .notice(.retrying(_, attempt, _, _)) = $0 { true } else { false } })
            #expect(machine.limits == limits)
            clock.advance(by: .seconds(30))
            #expect(machine.next(input(), now: clock.now) == .send(exchange))
        }
        _ = machine.handle(.failed(early, carried: 0..<1000), of: exchange, now: clock.now)
        #expect(machine.next(input(), now: clock.now) == .stop(.failure(early)))
    }

    /// The user's limits win over the server's: `Retry-After: 999999` waits at most the
    /// backoff cap (30 s), and never past `maxRetryTime`, which then stops the upload.
    @Test func retryAfterIsBoundedByTheBackoffCapAndTheRetryTimeLimit() {
        let exchange = Machine.Exchange.segment(from: 0, limits: limits)
        let busy = answer(503, retryAfter: "999999")

        var forever = machine(retries: nil)
        _ = forever.handle(.answered(busy, carried: 0..<10), of: exchange, now: clock.now)
        #expect(forever.next(input(), now: clock.now) == .sleep(until: clock.now.advanced(by: .seconds(30))))

        var bounded = machine(retries: nil, maxRetryTime: .seconds(45))
        let started = clock.now
        let effects = bounded.handle(.answered(busy, carried: 0..<10), of: exchange, now: clock.now)
        #expect(effects.contains { if case .notice(.retrying(_, 1, .seconds(30), true)) = $0 { true } else { false } })
        clock.advance(by: .seconds(30))
        #expect(bounded.next(input(), now: clock.now) == .send(exchange))
        _ = bounded.handle(.answered(busy, carried: 0..<10), of: exchange, now: clock.now)
        // 15 s are left of the 45: the wait ends there, not 30 s on.
        #expect(bounded.next(input(), now: clock.now) == .sleep(until: started.advanced(by: .seconds(45))))
        clock.advance(by: .seconds(15))
        #expect(bounded.next(input(), now: clock.now) == .send(exchange))
        _ = bounded.handle(.answered(busy, carried: 0..<10), of: exchange, now: clock.now)
        #expect(bounded.next(input(), now: clock.now) == .stop(.answer(status: 503)))
    }

    /// Resumable: create, append, a broken append asks HEAD where to go on, and the end
    /// completes the upload.
    @Test func resumableCreatesAppendsChecksAndCompletes() {
        var machine = machine(resumable: true)
        #expect(machine.next(input(), now: clock.now) == .send(.create(at: 0)))
        var created = answer(201)
        created.location = "http://h/uploads/1"
        let upload = ResumableUploadReference(url: "http://h/uploads/1", base: 0, target: nil)
        #expect(machine.handle(.answered(created, carried: 0..<0), of: .create(at: 0), now: clock.now) == [.saveUpload(upload)])
        let append = Machine.Exchange.append(upload, from: 0, limits: limits)
        #expect(machine.next(input(), now: clock.now) == .send(append))
        var appended = answer(201)
        appended.uploadOffset = 40
        #expect(machine.handle(.answered(appended, carried: 0..<40), of: append, now: clock.now) == [.acknowledge(upTo: 40)])
        let next = Machine.Exchange.append(upload, from: 40, limits: limits)
        #expect(machine.next(input(acknowledged: 40), now: clock.now) == .send(next))
        _ = machine.handle(.failed(cut, carried: 40..<90), of: next, now: clock.now)
        clock.advance(by: .seconds(1))
        #expect(machine.next(input(acknowledged: 40), now: clock.now) == .send(.checkOffset(upload)))
        var held = answer(204)
        held.uploadOffset = 70
        #expect(machine.handle(.answered(held, carried: 0..<0), of: .checkOffset(upload), now: clock.now) == [.acknowledge(upTo: 70)])
        #expect(machine.next(input(acknowledged: 70, ended: true, end: 70), now: clock.now) == .send(.complete(upload, at: 70)))
        #expect(machine.handle(.answered(answer(200), carried: 0..<0), of: .complete(upload, at: 70), now: clock.now) == [.saveUpload(nil)])
        #expect(machine.next(input(acknowledged: 70, ended: true, end: 70), now: clock.now) == .finish)
    }

    /// Resumable: the completing PATCH's answer is lost and the server then forgot the upload
    /// (HEAD 404): every byte had been acknowledged, so the upload is done, not created again.
    @Test func aLostCompletionAnswerFinishesInsteadOfCreatingAnUpload() {
        let upload = ResumableUploadReference(url: "http://h/uploads/1", base: 0, target: nil)
        var machine = Machine(
            Machine.Configuration(limits: limits, retry: RetryPolicy(), resumable: true, keepsDeadLetters: false, random: { $0 }),
            acknowledged: 30, alreadySent: 30, upload: upload)
        #expect(machine.next(input(acknowledged: 30, ended: true, end: 30), now: clock.now) == .send(.checkOffset(upload)))
        var held = answer(204)
        held.uploadOffset = 30
        _ = machine.handle(.answered(held, carried: 0..<0), of: .checkOffset(upload), now: clock.now)
        #expect(machine.next(input(acknowledged: 30, ended: true, end: 30), now: clock.now) == .send(.complete(upload, at: 30)))
        _ = machine.handle(.failed(cut, carried: 30..<30), of: .complete(upload, at: 30), now: clock.now)
        clock.advance(by: .seconds(1))
        #expect(machine.next(input(acknowledged: 30, ended: true, end: 30), now: clock.now) == .send(.checkOffset(upload)))
        let effects = machine.handle(.answered(answer(404), carried: 0..<0), of: .checkOffset(upload), now: clock.now)
        #expect(effects == [.saveUpload(nil), .notice(.completionAnswerLost)])
        #expect(machine.next(input(acknowledged: 30, ended: true, end: 30), now: clock.now) == .finish)
    }

    /// Resumable: a server that claims more than was ever sent breaks the protocol.
    @Test func aServerClaimingUnsentBytesIsAProtocolViolation() {
        let upload = ResumableUploadReference(url: "http://h/uploads/1", base: 0, target: nil)
        var machine = Machine(
            Machine.Configuration(limits: limits, retry: RetryPolicy(), resumable: true, keepsDeadLetters: false),
            acknowledged: 0, alreadySent: 10, upload: upload)
        var held = answer(204)
        held.uploadOffset = 11
        _ = machine.handle(.answered(held, carried: 0..<0), of: .checkOffset(upload), now: clock.now)
        guard case .stop(.protocolViolation(let message)) = machine.next(input(), now: clock.now) else {
            Issue.record("not stopped")
            return
        }
        #expect(message.contains("more than was sent"))
    }

    /// Resumable: an upload the server forgot (404 on append) is created again at the
    /// acknowledged offset.
    @Test func aForgottenUploadIsCreatedAgainAtTheAcknowledgedOffset() {
        let upload = ResumableUploadReference(url: "http://h/uploads/1", base: 0, target: nil)
        var machine = Machine(
            Machine.Configuration(limits: limits, retry: RetryPolicy(), resumable: true, keepsDeadLetters: false, random: { $0 }),
            acknowledged: 50, alreadySent: 50, upload: upload)
        var held = answer(204)
        held.uploadOffset = 50
        _ = machine.handle(.answered(held, carried: 0..<0), of: .checkOffset(upload), now: clock.now)
        let append = Machine.Exchange.append(upload, from: 50, limits: limits)
        #expect(machine.handle(.answered(answer(404), carried: 50..<60), of: append, now: clock.now).first == .saveUpload(nil))
        clock.advance(by: .seconds(1))
        #expect(machine.next(input(acknowledged: 50), now: clock.now) == .send(.create(at: 50)))
    }
}
