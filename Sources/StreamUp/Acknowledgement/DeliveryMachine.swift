/// The decisions of an acknowledged upload, as a pure state machine: which exchange with the
/// server comes next, what an answer or a failure means, when to retry and how long to wait,
/// when to send smaller segments, and when to give up or set a segment aside. It does no I/O
/// and reads no clock: ``StreamUploader`` asks it for the next ``Action``, carries it out,
/// and reports the ``Result`` with the time; tests drive it on a manual clock.
///
/// Plain delivery sends each segment as a request of its own; resumable delivery (IETF
/// resumable uploads, interop version 6) creates one upload and appends each segment with a
/// PATCH, asking the server for its offset after any failure (DeliveryMachine+Resumable).
///
/// What is a result and not an error: every HTTP status. 2xx acknowledges; 408, 429 and 5xx
/// (by default) are retried after a backoff with full jitter, or `Retry-After`; 413, and a
/// second 429 in a row for the same segment a second or more after its first (a rate limit's
/// burst it never passes), make
/// segments smaller for good, never below one record: a record alone refused 413 is final;
/// other 4xx, TLS certificate failures and answers the receiver's reader knows for permanent
/// are final: with dead letters the segment is set aside and the stream goes on, without them
/// the upload stops. An answer that
/// refuses some records and stores the others is a partial failure (DeliveryMachine+Partial).
///
/// Several plain segments may be out at once, up to a window (DeliveryMachine+Window): each
/// is cut from the end of the one before it, and the stream is acknowledged only up to the
/// first segment not yet answered 2xx.
///
/// Thread safety: a value type, confined to the uploader's delivery task.
struct DeliveryMachine<Instant: InstantProtocol> where Instant.Duration == Duration {
    struct Configuration {
        /// The segment size and time to aim for (a failing link gets smaller ones).
        var limits: SegmentLimits
        var retry: RetryPolicy
        var resumable: Bool
        /// Set final failures aside (a dead-letter directory) instead of stopping.
        var keepsDeadLetters: Bool
        /// A failing spell is over (and reported recovered) once a success comes this long after
        /// the last failure, so a flaky link gets one pair of lines, not one per blip.
        var quietPeriod: Duration = .seconds(10)
        /// A failing spell is reported again (how long, how many attempts) once this long has
        /// passed since its last report, so a long outage is never silent.
        var reportEvery: Duration = .seconds(60)
        /// Chooses a backoff within its bound (full jitter); tests pin it.
        var random: @Sendable (Double) -> Double = { Double.random(in: 0...$0) }
        /// The most plain segments out at once (1: each waits for the answer to the one before).
        var maxInFlight = 1
        /// Whether the window grows and shrinks with the answers (``ConcurrencyWindow``), or
        /// stays at `maxInFlight`.
        var adaptive = false
    }

    let configuration: Configuration
    /// The segment size now: the configured one, lowered for good by a 413, a request over a
    /// rate limit's burst, or a request whose connection broke three times in a row.
    private(set) var limits: SegmentLimits
    /// The most a segment may be now (it never grows back).
    var cap: Int { limits.maxBytes }
    /// Trouble with the segment being retried (its 429s, its broken connections); cleared by
    /// a success.
    private var trouble = SegmentTrouble()
    /// Failed attempts since the last acknowledged progress; refilled by progress.
    private var budget = RetryBudget()
    /// The failing spell a person hears about.
    private var spell: FailingSpell
    /// Running, backing off, or holding a stop or a resumable dead letter.
    private var course = Course.running
    /// The plain segments out or waiting, in stream order (DeliveryMachine+Window).
    var window: [Segment] = []
    /// Where an earlier run cut the segments it sent and that are not acknowledged (from its
    /// spool): the first segments of this run are cut the same.
    var recoveredCuts: [Range<Int>]
    /// How many plain segments may be out at once now.
    var concurrency: ConcurrencyWindow
    /// Everything below this offset is acknowledged (the machine's own count, which the
    /// uploader's buffer follows through the `.acknowledge` effects and dead letters).
    private(set) var acknowledged: Int
    /// What requests carried: the highest offset, the bytes sent more than once.
    private var sent: SentLog
    /// Failed attempts that were retried.
    private(set) var retries = 0
    var resumable: ResumableState

    /// Failed attempts since the last acknowledged progress (the retry budget).
    var failures: Int { budget.failures }
    /// The highest stream offset any request carried (an earlier run's spool counts).
    var highestSent: Int { sent.highest }
    /// Bytes sent more than once.
    var resentBytes: Int { sent.resent }

    /// A machine for a stream whose first `alreadySent` bytes may have been sent by an earlier
    /// run (a spool's) in segments cut at `cuts`, continuing `upload` if that run left one.
    init(_ configuration: Configuration, acknowledged: Int = 0, alreadySent: Int = 0, cuts: [Range<Int>] = [], upload: Upload? = nil) {
        self.configuration = configuration
        self.recoveredCuts = cuts.filter { $0.upperBound > acknowledged }
        self.acknowledged = acknowledged
        self.limits = configuration.limits
        self.sent = SentLog(alreadySent: max(alreadySent, acknowledged))
        self.spell = FailingSpell(quietPeriod: configuration.quietPeriod, reportEvery: configuration.reportEvery)
        self.resumable = ResumableState(upload: upload)
        let most = configuration.resumable ? 1 : max(1, configuration.maxInFlight)
        self.concurrency = ConcurrencyWindow(maximum: most, adaptive: configuration.adaptive && most > 1)
    }

    // MARK: Next action

    mutating func next(_ input: Input, now: Instant) -> Action {
        precondition(input.acknowledged == acknowledged, "the buffer is at \(input.acknowledged), the machine at \(acknowledged)")
        switch course {
        case .stopped(let stop): return .stop(stop)
        case .settingAside(let from, let carried, let limits, let reason):
            return .deadLetter(from: from, carried: carried, limits: limits, reason: reason)
        case .backingOff, .running: break
        }
        if let dead = window.first, case .deadLetter(let carried, let limits, let reason) = dead.phase {
            return .deadLetter(from: dead.from, carried: carried, limits: limits, reason: reason)
        }
        if case .backingOff(let until) = course {
            if now < until { return .sleep(until: until) }
            course = .running
        }
        if configuration.resumable {
            // One exchange at a time: each depends on the answer to the one before.
            if resumable.exchangeOut { return .awaitAnswers }
            let action = nextResumable(input)
            if case .send = action { resumable.exchangeOut = true }
            return action
        }
        return nextSegment(input)
    }

    /// Ends the backoff after a failure now: the next action is the retry (the uploader was
    /// asked to hurry by a finish or a flush with a deadline).
    mutating func endBackoff() {
        if case .backingOff = course { course = .running }
    }

    /// Backs off until `until` (nil: retries at once), unless the upload stops.
    private mutating func backOff(until: Instant?) {
        if case .stopped = course { return }
        course = until.map { .backingOff(until: $0) } ?? .running
    }

    // MARK: Results

    /// Takes the outcome of `exchange` (which `next` asked for) and returns what to do about it.
    /// `elsewhere`: another endpoint takes a request now, so a plain segment that failed in a way
    /// that is retried goes there at once, without a backoff (it still counts as a retry).
    mutating func handle(_ result: Result, of exchange: Exchange, now: Instant, elsewhere: Bool = false) -> [Effect] {
        switch (exchange, result) {
        case (.segment(let from, let limits), .answered(let answer, let carried)):
            noteSent(carried)
            noteCut(from: from, carried)
            if let partial = answer.partial {
                return handlePartial(partial, answer: answer, limits: limits, carried: carried, now: now)
            }
            if answer.isSuccess {
                return stored(from: from, now: now, answered: answer)
            }
            if answer.status >= 500 { sent.mayHaveStored(upTo: carried.upperBound) }
            return failed(.answer(answer), exchange: exchange, carried: carried, now: now, elsewhere: elsewhere)
        case (.segment(let from, _), .failed(let failure, let carried)):
            noteSent(carried)
            noteCut(from: from, carried)
            sent.mayHaveStored(upTo: carried.upperBound)
            return failed(.failure(failure), exchange: exchange, carried: carried, now: now, elsewhere: elsewhere)
        case (.create, _), (.checkOffset, _), (.append, _), (.complete, _):
            resumable.exchangeOut = false
            return handleResumable(result, of: exchange, now: now)
        }
    }

    /// The uploader set the segment aside up to `end` (the machine asked for it) and
    /// acknowledged past it. Returns the acknowledgement of segments after it that were
    /// already answered 2xx.
    @discardableResult
    mutating func deadLettered(upTo end: Int) -> [Effect] {
        if case .settingAside = course {
            course = .running
        } else if let first = window.first, case .deadLetter = first.phase {
            window.removeFirst()
        } else {
            preconditionFailure("no dead letter was asked for: \(course)")
        }
        acknowledged = max(acknowledged, end)
        budget.refill()
        let reached = takeStoredPrefix()
        guard reached > acknowledged else { return [] }
        acknowledged = reached
        return [.acknowledge(upTo: reached)]
    }

    // MARK: Success and failure (shared by both protocols)

    /// A 2xx that acknowledges the stream up to `offset`.
    mutating func succeeded(acknowledging offset: Int, now: Instant) -> [Effect] {
        var effects: [Effect] = []
        if offset > acknowledged {
            acknowledged = offset
            effects.append(.acknowledge(upTo: offset))
        }
        budget.refill()
        trouble.clear()
        if let recovered = spell.succeeded(now: now) { effects.append(.notice(recovered)) }
        return effects
    }

    /// Ends the failing spell, if any, with its notice (also when the upload ends).
    mutating func endSpell(now: Instant) -> [Effect] {
        spell.end().map { [.notice($0)] } ?? []
    }

    enum Problem: Equatable {
        case answer(Answer)
        case failure(Failure)
        var reason: String {
            switch self {
            case .answer(let answer): "\(answer.endpoint ?? "the server") answered \(answer.status)" + (answer.firstLine.map { ": \($0)" } ?? "")
            case .failure(let failure): (failure.endpoint.map { "\($0): " } ?? "") + failure.message
            }
        }
    }

    /// Whether `result` is a failure the retry policy retries (no answer, 408, 429, 5xx): the
    /// endpoint it came from is set aside for a while.
    func isRetryable(_ result: Result) -> Bool {
        Self.problem(of: result).map(isRetryable) ?? false
    }

    /// What went wrong in `result`, if anything did.
    static func problem(of result: Result) -> Problem? {
        switch result {
        case .answered(let answer, _): answer.isSuccess ? nil : .answer(answer)
        case .failed(let failure, _): .failure(failure)
        }
    }

    /// An attempt failed: retry after a backoff, shrink, set the segment aside, or stop.
    mutating func failed(
        _ problem: Problem, exchange: Exchange, carried: Range<Int>, now: Instant, alwaysRetry: Bool = false, elsewhere: Bool = false
    ) -> [Effect] {
        if case .failure(let failure) = problem, failure.kind == .cancelled {
            stop(.failure(failure))
            return []
        }
        var effects: [Effect] = []
        if case .answer(let answer) = problem, answer.status == 413, let (_, sent) = Self.segment(of: exchange) {
            // Too large for the server (or a proxy before it): smaller segments from now on,
            // never below one record. A request over its segment size is one record alone
            // (SegmentPlan): no smaller request holds it, so the refusal is final for it.
            guard !Self.isLoneRecord(carried, sent) else {
                return final(problem, exchange: exchange, carried: carried, reason: Self.tooLarge(answer, record: carried.count))
            }
            shrink(below: carried, sent, reason: "the server answered 413 (too large)", into: &effects)
            sendAgain(exchange)
            concurrency.overloaded()
            return effects
        }
        if case .answer(let answer) = problem, answer.status == 429, !alwaysRetry, let (from, sent) = Self.segment(of: exchange) {
            noteRateRefusal(from: from, sent: sent, carried: carried, now: now, into: &effects)
        }
        guard alwaysRetry || isRetryable(problem) else { return effects + final(problem, exchange: exchange, carried: carried) }
        budget.spend(now: now)
        let (first, stillFailing) = spell.failed(problem.reason, now: now, elsewhere: elsewhere)
        if let stillFailing { effects.append(.notice(stillFailing)) }
        if budget.isSpent(by: configuration.retry, now: now) { return effects + final(problem, exchange: exchange, carried: carried) }
        if case .failure(let failure) = problem, failure.kind == .transport, !carried.isEmpty, let (from, sent) = Self.segment(of: exchange) {
            noteBreak(from: from, sent: sent, carried: carried, into: &effects)
        }
        retries += 1
        sendAgain(exchange)
        if Self.isOverload(problem) { concurrency.overloaded() }
        var retryAfter: String?
        if case .answer(let answer) = problem { retryAfter = answer.retryAfter }
        // No answer and nothing of the request out: the receiver was not reached (the policy's
        // `maxReconnectDelay` bounds the wait).
        let reached = if case .failure(let failure) = problem, failure.kind == .transport, carried.isEmpty { false } else { true }
        // Another endpoint is there: no reason to wait (that endpoint is set aside instead).
        let delay = elsewhere ? .zero : backoff(attempt: budget.failures, retryAfter: retryAfter, reached: reached, now: now)
        backOff(until: elsewhere ? nil : now.advanced(by: delay))
        effects.append(.notice(.retrying(reason: problem.reason, attempt: budget.failures, delay: delay, first: first)))
        return effects
    }

    /// A 429 to the segment from `from`. A rate limit's burst smaller than the request never
    /// lets it pass: a request refused again a second or more after its first 429 is taken as
    /// refused for its size and shrinks like a 413 (the retry still honours Retry-After).
    /// Quicker refusals are a request-rate limit's (nginx `limit_req`), which more, smaller
    /// requests would only make worse.
    private mutating func noteRateRefusal(from: Int, sent: SegmentLimits, carried: Range<Int>, now: Instant, into effects: inout [Effect]) {
        let loneRecord = Self.isLoneRecord(carried, sent)
        guard trouble.refusedForSize(from: from, now: now, window: Self.rateWindow, loneRecord: loneRecord) else { return }
        let reason = "the server answered 429 (too many requests) twice to a request of \(carried.count) bytes"
        shrink(below: carried, sent, reason: reason, into: &effects)
    }

    /// The connection of the segment from `from` broke while it carried `carried`. A broken
    /// connection or a timeout keeps the segment's size: the receiver may have stored it (a
    /// lost answer looks the same from here, socket buffers hold megabytes), and only a resend
    /// identical to it is one the receiver can drop (ClickHouse's de-duplication of an
    /// identical insert). Only when the same segment's connection broke a third time in a row
    /// is the link taken to cut requests of that size (a body or memory limit that closes
    /// instead of answering 413, as Fluent Bit's http input does past its `Mem_Buf_Limit`):
    /// then segments go to half of what it carried, for good, as after a 413. Growing back
    /// would meet the same limit again, and such a receiver keeps part of each request it
    /// drops (measured: a third of the lines twice when successes doubled the size back).
    /// Segments out together that break together lower the size once, not once each.
    private mutating func noteBreak(from: Int, sent: SegmentLimits, carried: Range<Int>, into effects: inout [Effect]) {
        guard limits.maxBytes > 1 else { return }
        if trouble.broke(from: from, limit: Self.breaksBeforeShrinking) {
            let reason = "the connection broke \(Self.breaksBeforeShrinking) times in a row during a request of \(carried.count) bytes"
            shrink(below: carried, sent, reason: reason, into: &effects)
        }
    }

    /// The wait before the retry after failure number `attempt`: the policy's (a server's
    /// `Retry-After` no longer than its `maxDelay`; its `maxReconnectDelay` when the attempt
    /// never `reached` the receiver), and never past `maxRetryTime`, so the user's limits hold
    /// whatever the server asks for.
    private func backoff(attempt: Int, retryAfter: String?, reached: Bool, now: Instant) -> Duration {
        let delay = configuration.retry.delay(attempt: attempt, retryAfter: retryAfter, reached: reached, random: configuration.random)
        return budget.limit(delay, by: configuration.retry, now: now)
    }

    /// How long after a segment's first 429 another one means its size, not the rate: a
    /// per-second request limit has let some request through by then.
    static var rateWindow: Duration { .seconds(1) }

    /// Lowers the segment size, for good, below a request that carried `carried` with `sent`
    /// limits: half of it, which the plan still fills with one whole record at least. Said
    /// once per new size: requests out together that meet the same limit lower it once.
    private mutating func shrink(below carried: Range<Int>, _ sent: SegmentLimits, reason: String, into effects: inout [Effect]) {
        let size = carried.isEmpty ? sent.maxBytes : min(sent.maxBytes, carried.count)
        let lowered = max(1, size / 2)
        guard lowered < limits.maxBytes else { return }
        limits.maxBytes = lowered
        effects.append(.notice(.segmentShrunk(toBytes: lowered, reason: reason)))
    }

    /// Whether a request that carried `carried` with `sent` limits was one record alone that
    /// no smaller segment holds: the plan goes over the size only for a first record longer
    /// than it.
    static func isLoneRecord(_ carried: Range<Int>, _ sent: SegmentLimits) -> Bool {
        carried.count > sent.maxBytes || (sent.maxBytes <= 1 && !carried.isEmpty)
    }

    /// Why a record that no request can carry was refused.
    static func tooLarge(_ answer: Answer, record bytes: Int) -> String {
        "the server answered \(answer.status) (too large) to a request of one record of \(bytes) bytes alone; no smaller request can hold it"
    }

    /// A failure that is not retried (or no longer): set the segment aside, or stop.
    /// `reason` replaces the problem's own words (a record too large for any request).
    mutating func final(_ problem: Problem, exchange: Exchange, carried: Range<Int>, reason: String? = nil) -> [Effect] {
        if configuration.keepsDeadLetters, let (from, segmentLimits) = Self.segment(of: exchange) {
            let reason = reason ?? problem.reason
            if !configuration.resumable {
                setAside(from: from, carried: carried, limits: segmentLimits, reason: reason)
                return []
            }
            course = .settingAside(from: from, carried: carried, limits: segmentLimits, reason: reason)
            // The rejected bytes leave a gap in the upload: the stream goes on in a new one.
            resumable.forget()
            return [.saveUpload(nil)]
        }
        switch problem {
        case .answer(let answer): stop(.answer(status: answer.status))
        case .failure(let failure): stop(.failure(failure))
        }
        return reason.map { [.notice(.stopping(reason: $0))] } ?? []
    }

    private func isRetryable(_ problem: Problem) -> Bool {
        switch problem {
        case .answer(let answer): !answer.permanent && configuration.retry.isRetryable(status: answer.status)
        case .failure(let failure): failure.kind == .transport || (failure.kind == .earlyAnswer && budget.failures < Self.earlyAnswerRetries)
        }
    }

    /// How many early 2xx answers in a row are retried: a server that answers before reading
    /// does it to every resend.
    static var earlyAnswerRetries: Int { 3 }

    /// Counts bytes a request carried that an earlier one had carried already.
    mutating func noteSent(_ carried: Range<Int>) {
        spell.resent(sent.note(carried, acknowledged: acknowledged))
    }

    /// Stops the upload (a later stop replaces an earlier one).
    mutating func stop(_ stop: Stop) { course = .stopped(stop) }

    /// Identical sends of one segment whose connection broke before it goes smaller.
    static var breaksBeforeShrinking: Int { 3 }

    private static func segment(of exchange: Exchange) -> (Int, SegmentLimits)? {
        switch exchange {
        case .segment(let from, let limits), .append(_, let from, let limits): (from, limits)
        case .create, .checkOffset, .complete: nil
        }
    }
}
