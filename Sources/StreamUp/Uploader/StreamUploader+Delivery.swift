import Foundation
import StreamUpHTTP

/// The delivery loop. One task asks the `DeliveryMachine` what to do, carries each exchange
/// (``UploadExchange``: cut → body → request → answer → outcome) through its stages, and feeds
/// each outcome back to the machine in the order the outcomes arrive.
///
/// Where the time between two segments goes: when nothing else is out, the loop cuts the next
/// segment itself (a cut whose records are there returns without suspending), starts its
/// request, and, when the window lets one request out at a time, awaits the answer itself too:
/// from an answer to the next request's head there is one resumption of this task (the
/// answer's), and no task to start. Beside other requests, cuts that wait for records and
/// requests run as child tasks of a task group, so an answer is never held up behind a cut, a
/// wait for input or a backoff (which then run as children too). A producer waiting for the
/// room an answer frees is woken once the next request has started (or the loop waits for
/// anything else), so its refill runs beside that request, not inside the turnaround
/// (``ReplayBuffer/acknowledge(upTo:releasingBelow:wakingLater:)``).
extension StreamUploader {
    typealias Machine = DeliveryMachine<UploadClock.Instant>
    typealias Endpoints = EndpointSet<UploadClock.Instant>

    /// What a child task of the delivery loop reports to the loop.
    enum DeliveryEvent: Sendable {
        /// The cut of `exchange` (nil for an exchange with no body), or why there is none.
        case cut(UploadExchange, Swift.Result<Range<Int>?, StreamUpError>)
        /// `exchange` ended.
        case ended(UploadExchange, UploadExchange.Outcome)
        /// Input came, or the wait for it ended.
        case inputReady
        /// A backoff ended (`hurried`: a finish or flush ended it early).
        case slept(hurried: Bool)
    }

    /// What the loop keeps between exchanges.
    struct DeliveryLog {
        var lastAnswer: UploadResponse?
        var lastSuccess: UploadResponse?
        var lastError: StreamUpError?
        var splitReported = false
        /// Exchanges out (cutting or sending), the lowest offset a wait for input runs from
        /// (nil: none runs), and whether a backoff runs.
        var exchanges = 0
        var waitsForInput: Int?
        var sleeps = false
        var isIdle: Bool { exchanges == 0 && waitsForInput == nil && !sleeps }
    }

    /// The loop's child tasks.
    private typealias Group = ThrowingTaskGroup<DeliveryEvent, Error>

    func deliver(_ transport: any ExchangeTransport) async throws -> UploadResponse {
        var endpoints = Endpoints(
            options.endpoints.isEmpty ? [configuration.url] : options.endpoints, choice: options.endpointChoice, retry: options.retry)
        var log = DeliveryLog()
        let context = exchangeContext(transport)
        // What every plain segment to an endpoint shares is built once.
        let templates = (0..<endpoints.count).map { index in
            var configuration = configuration
            configuration.url = endpoints.url(index)
            return UploadRequest.SegmentTemplate(configuration)
        }
        // However the loop ends, no producer stays held back.
        defer { buffer.wakeHeld() }
        return try await withThrowingTaskGroup(of: DeliveryEvent.self) { group in
            defer { group.cancelAll() }
            while true {
                if let failure = buffer.failure { throw failure }
                reportSplitRecords(&log)
                let (input, now) = (input, clock.now)
                let action = machine.withLock { $0.next(input, now: now) }
                // Only a request started alone goes out before the producer is woken.
                if case .send = action, log.isIdle {} else { buffer.wakeHeld() }
                switch action {
                case .send(let planned):
                    let exchange = plan(planned, endpoints: &endpoints, templates: templates, context: context)
                    let alone = log.isIdle
                    log.exchanges += 1
                    if alone {
                        // Nothing else is out: cut here (no task to start; no suspension when
                        // the records are there), then send.
                        let cut = await exchange.cut(reusing: keptCut(for: exchange))
                        if let sending = try settle(.cut(exchange, cut), endpoints: &endpoints, log: &log, group: &group, alone: true) {
                            try conclude(exchange, await sending.outcome(), endpoints: &endpoints, log: &log)
                        }
                    } else {
                        let kept = keptCut(for: exchange)
                        group.addTask { .cut(exchange, await exchange.cut(reusing: kept)) }
                    }
                    continue
                case .waitForInput(let offset):
                    if log.isIdle {
                        await buffer.waitUntilReadable(from: offset)
                        continue
                    }
                    // A full buffer whose records are all out gets nothing new before an
                    // answer frees room (its wait would end at once, again and again).
                    // A wait from further on (for a whole segment beside requests out) does not
                    // see a record past `offset`: one from here then runs too.
                    if log.waitsForInput.map({ offset < $0 }) ?? true, !isFull {
                        log.waitsForInput = offset
                        group.addTask { [buffer] in
                            await buffer.waitUntilReadable(from: offset)
                            return .inputReady
                        }
                    }
                case .sleep(let until):
                    if log.isIdle {
                        if try await backoff.sleep(until: until, on: clock) { machine.withLock { $0.endBackoff() } }
                        continue
                    }
                    if !log.sleeps {
                        log.sleeps = true
                        group.addTask { [backoff, clock] in .slept(hurried: (try? await backoff.sleep(until: until, on: clock)) ?? false) }
                    }
                case .awaitAnswers:
                    break
                case .deadLetter(let from, let carried, let limits, let reason):
                    try setAside(from: from, carried: carried, limits: limits, reason: reason, log: log)
                    continue
                case .finish, .stop:
                    return try ending(action, log)
                }
                guard let event = try await group.next() else { preconditionFailure("the machine waits for an answer but nothing is out") }
                try settle(event, endpoints: &endpoints, log: &log, group: &group, alone: false)
            }
        }
    }

    /// What every exchange of this upload shares, with `transport`.
    private func exchangeContext(_ transport: any ExchangeTransport) -> UploadExchange.Context {
        UploadExchange.Context(
            buffer: buffer, configuration: configuration, streamID: streamID, answerReader: options.answerReader, transport: transport,
            clock: clock, onEvent: onEvent, onRedactedEvent: onRedactedEvent, sending: sending, beforeSegment: { [weak self] in self?.saveNewTimes() },
            recordNames: { [weak self] in self?.recordNames(for: $0) })
    }

    /// The exchange the machine asked for: a plain segment's endpoint is chosen now.
    private func plan(
        _ planned: Machine.Exchange, endpoints: inout Endpoints, templates: [UploadRequest.SegmentTemplate?], context: UploadExchange.Context
    ) -> UploadExchange {
        let skipped = skippedBytes
        guard case .segment(let from, _) = planned else {
            return UploadExchange(planned: planned, endpoint: nil, target: nil, template: nil, skipped: skipped, context: context)
        }
        let index = endpoints.choose(now: clock.now)
        let place = endpoints.place(index, offset: from - skipped)
        let target = UploadExchange.Target(
            url: endpoints.url(index), streamName: place.start == 0 ? streamID : "\(streamID)-from-\(place.start)", offset: place.offset)
        return UploadExchange(planned: planned, endpoint: index, target: target, template: templates[index], skipped: skipped, context: context)
    }

    /// The cut the machine keeps for a plain segment sent again (nil: cut anew).
    private func keptCut(for exchange: UploadExchange) -> Range<Int>? {
        guard case .segment(let from, let limits) = exchange.planned else { return nil }
        return machine.withLock { $0.keptCut(from: from, limits: limits) }
    }

    /// Takes a report: a cut goes out as a request (the machine learns where it ends, and a
    /// spool keeps it first), an ended exchange goes to the machine, a wait's end lets the loop
    /// ask again. `alone`: nothing else is out, so the loop starts the request itself; it
    /// returns it when nothing else can go out before its answer (the loop awaits it then).
    @discardableResult
    private func settle(
        _ event: DeliveryEvent, endpoints: inout Endpoints, log: inout DeliveryLog, group: inout Group, alone: Bool
    ) throws -> UploadExchange.Sending? {
        switch event {
        case .cut(let exchange, .success(let segment)):
            if case .segment(let from, _) = exchange.planned, let segment {
                let keeps = spool != nil
                let cuts = machine.withLock { machine in
                    machine.cut(from: from, segment)
                    return keeps ? machine.cuts : []
                }
                // Kept before it is sent: a resend after a restart carries the same records.
                do {
                    try spool?.saveCuts(cuts)
                } catch {
                    try conclude(exchange, exchange.cutFailed(error), endpoints: &endpoints, log: &log)
                    return nil
                }
            }
            guard alone else {
                // Beside other requests its body is built in the child (gzip of one segment
                // runs beside another's).
                group.addTask { .ended(exchange, await exchange.start(segment).outcome()) }
                return nil
            }
            let sending = exchange.start(segment)
            buffer.wakeHeld()
            // Nothing else can go out before its answer: the loop waits for it itself.
            if machine.withLock({ $0.letsOneOut }) { return sending }
            group.addTask { .ended(exchange, await sending.outcome()) }
        case .cut(let exchange, .failure(let failure)):
            try conclude(exchange, exchange.cutFailed(failure), endpoints: &endpoints, log: &log)
        case .ended(let exchange, let outcome):
            try conclude(exchange, outcome, endpoints: &endpoints, log: &log)
        case .inputReady:
            log.waitsForInput = nil
        case .slept(let hurried):
            log.sleeps = false
            if hurried { machine.withLock { $0.endBackoff() } }
        }
        return nil
    }

    /// Hands the outcome of `exchange` to the machine and carries out its effects.
    private func conclude(_ exchange: UploadExchange, _ outcome: UploadExchange.Outcome, endpoints: inout Endpoints, log: inout DeliveryLog) throws {
        log.exchanges -= 1
        var result = outcome.result
        if let failure = buffer.failure { throw failure }
        if let response = outcome.response {
            log.lastAnswer = response
            if response.isSuccess { log.lastSuccess = response }
        }
        if let error = outcome.error { log.lastError = error }
        let now = clock.now
        var elsewhere = false
        if let endpoint = exchange.endpoint {
            if endpoints.count > 1 { result = result.naming(endpoints.url(endpoint).absoluteString) }
            let retryable = machine.withLock { $0.isRetryable(result) }
            let carried = Self.acknowledged(result, skipped: exchange.skipped)
            elsewhere = endpoints.report(result, of: endpoint, retryable: retryable, carried: carried, answer: outcome.response, now: now, onEvent: onEvent)
        }
        let effects = machine.withLock { $0.handle(result, of: exchange.planned, now: now, elsewhere: elsewhere) }
        for effect in effects { try apply(effect, answer: outcome.response, wakingLater: true) }
    }

    /// The receiver's offsets a 2xx to a plain segment acknowledged (empty for anything else).
    private static func acknowledged(_ result: Machine.Result, skipped: Int) -> Range<Int> {
        guard case .answered(let answer, let range) = result, answer.isSuccess else { return 0..<0 }
        return (range.lowerBound - skipped)..<(range.upperBound - skipped)
    }

    /// Keeps the segment from `from` as a dead letter (the machine asked for it: its last
    /// attempt carried `carried`; if that is empty, the records `limits` cut) and acknowledges
    /// past it.
    private func setAside(from: Int, carried: Range<Int>, limits: SegmentLimits, reason: String, log: DeliveryLog) throws {
        let range = carried.isEmpty ? buffer.segmentRange(from: from, limits: limits) : carried
        try keepDeadLetter(range, reason: reason, answer: log.lastAnswer)
        acknowledge(upTo: range.upperBound)
        for effect in machine.withLock({ $0.deadLettered(upTo: range.upperBound) }) { try apply(effect) }
    }

    /// The upload's answer once the machine finishes or stops (the requests still out, if any,
    /// are cancelled with the task group).
    private func ending(_ action: Machine.Action, _ log: DeliveryLog) throws -> UploadResponse {
        switch action {
        case .finish:
            let now = clock.now
            for effect in machine.withLock({ $0.endSpell(now: now) }) { try apply(effect) }
            guard let answer = log.lastSuccess ?? log.lastAnswer else {
                // Every segment went to the dead letters without an answer (a certificate
                // the system does not trust, a form boundary in the records): say why.
                if let lastError = log.lastError { throw lastError }
                // Nothing to send, so nothing was sent: no answer to tell.
                return UploadResponse(statusCode: 204, headers: [:], body: Data(), bytesSent: 0)
            }
            return answer
        case .stop(.answer):
            guard let lastAnswer = log.lastAnswer else { preconditionFailure("stopped on an answer that never came") }
            return lastAnswer
        case .stop(.failure(let failure)):
            throw log.lastError ?? StreamUpError(failure.kind == .cancelled ? .cancelled : .transport, failure.message)
        case .stop(.protocolViolation(let message)):
            throw StreamUpError(.protocolError, message)
        case .send, .waitForInput, .sleep, .awaitAnswers, .deadLetter:
            preconditionFailure("not an ending: \(action)")
        }
    }

    private func reportSplitRecords(_ log: inout DeliveryLog) {
        guard !log.splitReported, buffer.splitRecords > 0 else { return }
        log.splitReported = true
        onEvent(
            .notice(
                "a record longer than \(options.maxRecordBytes) bytes was split into pieces of that size (--max-record); each piece is sent as a record"
            ))
    }

    /// Whether the buffer holds all it can (the producer waits for an acknowledgement).
    private var isFull: Bool {
        let capacity = buffer.capacity
        return buffer.withState { $0.written - $0.acknowledged >= capacity }
    }

    /// The buffer as the machine needs it.
    private var input: Machine.Input {
        buffer.withState { state in
            Machine.Input(
                acknowledged: state.acknowledged, readable: state.boundary > state.acknowledged || state.inputEnded,
                inputEnded: state.inputEnded, end: state.written, boundary: state.boundary)
        }
    }

    /// Carries out `effect` of `answer` (the response the machine just handled, if any);
    /// `wakingLater`: a producer an acknowledgement frees is woken by the loop, later.
    private func apply(_ effect: Machine.Effect, answer: UploadResponse? = nil, wakingLater: Bool = false) throws {
        switch effect {
        case .acknowledge(let offset):
            acknowledge(upTo: offset, wakingLater: wakingLater)
        case .rejectRecords(let rejection):
            try reject(rejection, answer: answer)
        case .saveUpload(let upload):
            var kept = upload
            kept?.target = configuration.url.absoluteString
            try spool?.saveUpload(kept)
        case .notice(let notice):
            onEvent(notice.event(held: { [self] in progress.held }, inSpool: spool != nil, duplicatesPossible: options.delivery == .requests))
        }
    }

    /// One live chunked request (``SegmentDelivery/singleRequest``): the body is the buffer
    /// read as a stream (``LiveBody``), and the answer ends the upload.
    func deliverLive(_ transport: any ExchangeTransport) async throws -> UploadResponse {
        // One live request runs on URLSession alone: its body is a stream, not a complete body.
        guard let session = transport as? SegmentSession else { preconditionFailure("one live request is given a transport of its own") }
        let resolved = try configuration.resolvingHeaders()
        let (request, fields) = UploadRequest.make(.live, resolved)
        // The fields as sent, the header provider's (credentials) included.
        onEvent(.requestStarted(method: configuration.method, url: configuration.url, headers: fields))
        let body = LiveBody(buffer, encoding: resolved.body)
        let answer = try await session.send(request, body: body, segmented: false, onEvent: onEvent)
        // A 2xx before the body's end acknowledges nothing: the server did not read the rest
        // (gunicorn with a WSGI app that reads only Content-Length answers a chunked body at once).
        if answer.isSuccess, !buffer.isDelivered {
            throw StreamUpError(
                .protocolError,
                "the server answered \(answer.statusCode) before the request body ended, after \(counted(body.bytesSent, "byte")) of the stream: "
                    + "it did not read the rest, so the stream is not delivered (a server that reads only Content-Length bodies "
                    + "ignores a chunked one); send segments instead of one request")
        }
        return answer
    }

    /// Bytes set aside before the current offset (see `State.skipped`).
    private var skippedBytes: Int { state.withLock { $0.skipped } }
}

extension DeliveryMachine.Result {
    /// The result with `endpoint` named in its answer or failure (for messages).
    func naming(_ endpoint: String) -> Self {
        switch self {
        case .answered(var answer, let carried):
            answer.endpoint = endpoint
            return .answered(answer, carried: carried)
        case .failed(var failure, let carried):
            failure.endpoint = endpoint
            return .failed(failure, carried: carried)
        }
    }
}
