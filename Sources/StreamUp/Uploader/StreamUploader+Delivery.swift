import Foundation
import StreamUpHTTP

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The delivery loop. One task owns the `DeliveryMachine` (and the endpoint set): it asks the
/// machine what to do, starts each exchange as a child task of a task group, and feeds each
/// child's outcome back to the machine in the order the outcomes arrive. A plain segment takes
/// two children: one cuts it (waiting for its records), and once the owner knows where it ends
/// (so the next segment can be cut from there) one sends it. At most the machine's window of
/// requests is out at once; a wait for input or a backoff runs as a child too while requests
/// are out, so an answer is never held up behind it.
extension StreamUploader {
    typealias Machine = DeliveryMachine<UploadClock.Instant>

    /// What a child task of the delivery loop reports to the owner.
    enum DeliveryEvent: Sendable {
        /// The cut of `exchange` (nil for an exchange with no body), or why there is none.
        case cut(Machine.Exchange, endpoint: Int?, target: Target?, Swift.Result<Range<Int>?, StreamUpError>)
        /// `exchange` ended.
        case ended(Machine.Exchange, endpoint: Int?, Exchanged)
        /// Input came, or the wait for it ended.
        case inputReady
        /// A backoff ended (`hurried`: a finish or flush ended it early).
        case slept(hurried: Bool)
    }

    /// How an exchange ended: the machine's result, the answer if one came, the error if none did.
    typealias Exchanged = (result: Machine.Result, response: UploadResponse?, error: StreamUpError?)

    /// What the owner of the machine keeps between exchanges.
    struct DeliveryLog {
        var lastAnswer: UploadResponse?
        var lastSuccess: UploadResponse?
        var lastError: StreamUpError?
        var splitReported = false
        /// Plain requests out (cutting or sending), the lowest offset a wait for input runs from
        /// (nil: none runs), and whether a backoff runs.
        var exchanges = 0
        var waitsForInput: Int?
        var sleeps = false
        var isIdle: Bool { exchanges == 0 && waitsForInput == nil && !sleeps }
    }

    func deliver(_ session: SegmentSession) async throws -> UploadResponse {
        var machine = makeMachine()
        var endpoints = Endpoints(
            options.endpoints.isEmpty ? [configuration.url] : options.endpoints, choice: options.endpointChoice, retry: options.retry)
        var log = DeliveryLog()
        return try await withThrowingTaskGroup(of: DeliveryEvent.self) { group in
            defer { group.cancelAll() }
            while true {
                if let failure = buffer.failure { throw failure }
                reportSplitRecords(&log)
                let action = machine.next(input, now: clock.now)
                switch action {
                case .send(let exchange):
                    start(exchange, in: &group, endpoints: &endpoints, log: &log, session: session)
                    noteWindow(machine)
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
                        if try await backoff.sleep(until: until, on: clock) { machine.endBackoff() }
                        continue
                    }
                    if !log.sleeps {
                        log.sleeps = true
                        group.addTask { [backoff, clock] in .slept(hurried: (try? await backoff.sleep(until: until, on: clock)) ?? false) }
                    }
                case .awaitAnswers:
                    break
                case .deadLetter(let from, let carried, let limits, let reason):
                    try setAside(from: from, carried: carried, limits: limits, reason: reason, machine: &machine, log: log)
                    continue
                case .finish, .stop:
                    return try ending(action, machine, log)
                }
                guard let event = try await group.next() else { preconditionFailure("the machine waits for an answer but nothing is out") }
                try settle(event, machine: &machine, endpoints: &endpoints, log: &log, group: &group, session: session)
            }
        }
    }

    /// The delivery machine for this upload, from the options and where the buffer (and the
    /// spool of an earlier run) is.
    private func makeMachine() -> Machine {
        Machine(
            Machine.Configuration(
                limits: SegmentLimits(maxBytes: options.segmentBytes, maxDuration: options.segmentDuration, maxRecords: options.maxRecordsPerSegment),
                retry: options.retry, resumable: options.delivery == .resumableUpload, keepsDeadLetters: deadLetters != nil,
                // Offsets leave out what dead letters set aside, and a segment already out
                // when an earlier one is set aside would carry an offset that counts those
                // bytes (a gap a receiver ordering by offset never fills): one at a time then.
                maxInFlight: deadLetters == nil ? options.maxInFlight : 1, adaptive: options.adaptiveInFlight),
            acknowledged: buffer.acknowledgedOffset, alreadySent: buffer.producerStart, upload: recoveredUpload)
    }

    /// Keeps the segment from `from` as a dead letter (the machine asked for it: its last
    /// attempt carried `carried`; if that is empty, the records `limits` cut) and acknowledges
    /// past it.
    private func setAside(
        from: Int, carried: Range<Int>, limits: SegmentLimits, reason: String, machine: inout Machine, log: DeliveryLog
    ) throws {
        let range = carried.isEmpty ? buffer.segmentRange(from: from, limits: limits) : carried
        try keepDeadLetter(range, reason: reason, answer: log.lastAnswer)
        acknowledge(upTo: range.upperBound)
        for effect in machine.deadLettered(upTo: range.upperBound) { try apply(effect) }
    }

    /// The upload's answer once the machine finishes or stops (the requests still out, if any,
    /// are cancelled with the task group).
    private func ending(_ action: Machine.Action, _ machine: Machine, _ log: DeliveryLog) throws -> UploadResponse {
        var machine = machine
        switch action {
        case .finish:
            for effect in machine.endSpell(now: clock.now) { try apply(effect) }
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

    /// Starts `exchange` in a child task: its cut first (a plain segment's target is chosen now).
    private func start(
        _ exchange: Machine.Exchange, in group: inout ThrowingTaskGroup<DeliveryEvent, Error>, endpoints: inout Endpoints,
        log: inout DeliveryLog, session: SegmentSession
    ) {
        var endpoint: Int?
        var target: Target?
        if case .segment(let from, _) = exchange {
            let index = endpoints.choose(now: clock.now)
            let place = endpoints.place(index, offset: from - skippedBytes)
            endpoint = index
            target = Target(
                url: endpoints.url(index), streamName: place.start == 0 ? streamID : "\(streamID)-from-\(place.start)", offset: place.offset)
        }
        log.exchanges += 1
        group.addTask { [self] in .cut(exchange, endpoint: endpoint, target: target, await cut(for: exchange)) }
    }

    /// Takes a child's report: a cut goes out as a request (the machine learns where it ends),
    /// an ended exchange goes to the machine, and a wait's end lets the loop ask again.
    private func settle(
        _ event: DeliveryEvent, machine: inout Machine, endpoints: inout Endpoints, log: inout DeliveryLog,
        group: inout ThrowingTaskGroup<DeliveryEvent, Error>, session: SegmentSession
    ) throws {
        switch event {
        case .cut(let exchange, let endpoint, let target, .success(let segment)):
            if case .segment(let from, _) = exchange, let segment { machine.cut(from: from, segment) }
            group.addTask { [self] in
                .ended(exchange, endpoint: endpoint, await perform(exchange, segment: segment, session: session, to: target))
            }
        case .cut(let exchange, let endpoint, _, .failure(let failure)):
            let from = Self.start(of: exchange)
            try conclude(exchange, endpoint: endpoint, (.failed(Self.failure(failure), carried: from..<from), nil, failure), &machine, &endpoints, &log)
        case .ended(let exchange, let endpoint, let exchanged):
            try conclude(exchange, endpoint: endpoint, exchanged, &machine, &endpoints, &log)
        case .inputReady:
            log.waitsForInput = nil
        case .slept(let hurried):
            log.sleeps = false
            if hurried { machine.endBackoff() }
        }
    }

    /// Hands what came of `exchange` to the machine and carries out its effects.
    private func conclude(
        _ exchange: Machine.Exchange, endpoint: Int?, _ exchanged: Exchanged, _ machine: inout Machine, _ endpoints: inout Endpoints,
        _ log: inout DeliveryLog
    ) throws {
        log.exchanges -= 1
        var (result, response, error) = exchanged
        if let failure = buffer.failure { throw failure }
        if let response {
            log.lastAnswer = response
            if response.isSuccess { log.lastSuccess = response }
        }
        if let error { log.lastError = error }
        var elsewhere = false
        if let endpoint {
            if endpoints.count > 1 { result = result.naming(endpoints.url(endpoint).absoluteString) }
            elsewhere = report(result, of: endpoint, to: &endpoints, machine: machine, answer: response)
        }
        for effect in machine.handle(result, of: exchange, now: clock.now, elsewhere: elsewhere) {
            try apply(effect, answer: response)
        }
        state.withLock { state in
            state.resent = machine.resentBytes
            state.retries = machine.retries
        }
        noteWindow(machine)
    }

    /// Publishes the requests out and the window's size (the metrics read them).
    private func noteWindow(_ machine: Machine) {
        state.withLock { state in
            state.inFlight = machine.inFlight
            state.windowLimit = machine.concurrency.limit
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

    /// The stream offset an exchange starts at.
    static func start(of exchange: Machine.Exchange) -> Int {
        switch exchange {
        case .segment(let from, _), .append(_, let from, _): from
        case .create(let at), .complete(_, let at): at
        case .checkOffset(let upload): upload.base
        }
    }

    /// One live chunked request (``SegmentDelivery/singleRequest``): the body is the buffer
    /// read as a stream (``LiveBody``), and the answer ends the upload.
    func deliverLive(_ session: SegmentSession) async throws -> UploadResponse {
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

    typealias Endpoints = EndpointSet<UploadClock.Instant>

    /// Where a plain segment goes: the endpoint's URL, and the stream name and offset of its
    /// first byte there (``EndpointSet``).
    struct Target {
        var url: URL
        var streamName: String
        var offset: Int
    }

    /// Tells `endpoints` what came of a request to endpoint `index`, with a line when it is set
    /// aside or back; returns whether the segment goes to another endpoint at once.
    private func report(
        _ result: Machine.Result, of index: Int, to endpoints: inout Endpoints, machine: Machine, answer: UploadResponse?
    ) -> Bool {
        let now = clock.now
        let url = endpoints.url(index).absoluteString
        guard machine.isRetryable(result) else {
            var carried = 0..<0
            if case .answered(let answer, let range) = result, answer.isSuccess {
                let skipped = skippedBytes
                carried = (range.lowerBound - skipped)..<(range.upperBound - skipped)
            }
            if endpoints.succeeded(index, carried: carried, now: now), endpoints.count > 1 {
                onEvent(.notice("\(url) answers again: back in use"))
            }
            return false
        }
        let (aside, first) = endpoints.failed(index, retryAfter: answer?.value(forHeader: "Retry-After"), now: now)
        let elsewhere = endpoints.hasUsable(besides: index, now: now)
        if first, endpoints.count > 1, let problem = Machine.problem(of: result) {
            let meanwhile = elsewhere ? "the others take its segments meanwhile" : "no other endpoint is in use"
            onEvent(.notice(problem.reason + String(format: "; %@ is set aside for %.1f s (%@), then tried again", url, aside.seconds, meanwhile)))
        }
        return elsewhere
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

    /// Carries out `effect` of `answer` (the response the machine just handled, if any).
    private func apply(_ effect: Machine.Effect, answer: UploadResponse? = nil) throws {
        switch effect {
        case .acknowledge(let offset):
            acknowledge(upTo: offset)
        case .rejectRecords(let rejection):
            try reject(rejection, answer: answer)
        case .saveUpload(let upload):
            var kept = upload
            kept?.target = configuration.url.absoluteString
            try spool?.saveUpload(kept)
        case .notice(let notice):
            switch notice {
            case .retrying(let reason, let attempt, let delay, let first):
                onEvent(.retrying(reason: reason, attempt: attempt, delay: delay, first: first))
            case .stillFailing(let reason, let failedAttempts, let failingFor):
                let held = progress.held
                let place = spool == nil ? "in memory" : "in the spool"
                onEvent(
                    .notice(
                        "delivery has been failing for \(Self.spoken(failingFor)) (\(counted(failedAttempts, "failed attempt")), the last: \(reason)); "
                            + "\(counted(held, "byte")) held \(place), still retrying"))
            case .recovered(let failedAttempts, let resentBytes, let after):
                onEvent(.recovered(failedAttempts: failedAttempts, resentBytes: resentBytes, after: after, duplicatesPossible: options.delivery == .requests))
            case .segmentShrunk(let bytes, let reason):
                onEvent(.notice("\(reason): requests of whole records up to \(counted(bytes, "byte")) from now on (a longer record goes alone)"))
            case .completionAnswerLost:
                onEvent(.notice("the answer to the completing request was lost; the server had acknowledged every byte and has completed the upload"))
            case .receiverWarning(let text):
                onEvent(.notice(text))
            case .stopping(let reason):
                onEvent(.notice(reason + "; stopping (--dead-letter DIR sets such a record aside and goes on)"))
            }
        }
    }

    /// A duration as a person says it, to the second from a second on: `250 ms`, `45 s`,
    /// `2 min 5 s`, `3 h 10 min`. Every line that says how long something lasted uses it.
    package static func spoken(_ duration: Duration) -> String {
        if duration < .seconds(1) { return "\(max(0, Int((duration.seconds * 1000).rounded()))) ms" }
        let seconds = Int(duration.seconds.rounded())
        if seconds < 60 { return "\(seconds) s" }
        if seconds < 3600 { return "\(seconds / 60) min \(seconds % 60) s" }
        return "\(seconds / 3600) h \(seconds % 3600 / 60) min"
    }

    // MARK: One exchange

    /// The cut of `exchange`: a segment (or resumable append) waits in this task for its
    /// records (``ReplayBuffer/cutSegment(from:limits:)``); other exchanges carry no body.
    private func cut(for exchange: Machine.Exchange) async -> Swift.Result<Range<Int>?, StreamUpError> {
        do {
            switch exchange {
            case .segment(let from, let limits):
                let segment = try await cutSegment(from: from, limits: limits)
                // The times of the lines it carries are saved before it is sent.
                saveNewTimes()
                return .success(segment)
            case .append(_, let from, let limits): return .success(try await buffer.cutSegment(from: from, limits: limits))
            case .create, .checkOffset, .complete: return .success(nil)
            }
        } catch {
            return .failure(error as? StreamUpError ?? StreamUpError(.cancelled, "the upload was cancelled"))
        }
    }

    /// Sends `exchange` with the body `segment` (cut already) and says what came of it: the
    /// machine's result, the answer if one came, and the error if none did. The body is
    /// complete (``WindowBody``) and sent with `Content-Length`: nothing waits inside
    /// URLSession, so the process's other requests never queue behind a segment.
    private func perform(
        _ exchange: Machine.Exchange, segment: Range<Int>?, session: SegmentSession, to target: Target?
    ) async -> Exchanged {
        let requestStart = clock.now
        let configuration: UploadConfiguration
        let body: WindowBody?
        do {
            (configuration, body) = try prepare(exchange, segment: segment, to: target)
        } catch {
            // A body that cannot be built fails the same way every time: what it holds is the
            // segment a dead letter sets aside.
            let failure = error as? StreamUpError ?? StreamUpError(.io, "\(error)")
            return (.failed(Self.failure(failure), carried: segment ?? 0..<0), nil, failure)
        }
        let (request, fields, start) = build(exchange, configuration, target: target, bodyLength: body?.length)
        return await send(exchange, request: request, fields: fields, start: start, body: body, configuration, session: session, since: requestStart)
    }

    /// The configuration `exchange` goes out with (its target's URL) and its body.
    private func prepare(_ exchange: Machine.Exchange, segment: Range<Int>?, to target: Target?) throws -> (UploadConfiguration, WindowBody?) {
        var configuration = try self.configuration.resolvingHeaders()
        if let target { configuration.url = target.url }
        let allowsResend = if case .segment = exchange { true } else { false }
        let body = try segment.map {
            try WindowBody($0, of: buffer, encoding: configuration.body, allowsResend: allowsResend, streamID: streamID, names: recordNames(for: $0))
        }
        return (configuration, body)
    }

    /// Sends the request built for `exchange` and reads what came of it.
    private func send(
        _ exchange: Machine.Exchange, request: URLRequest, fields: [UploadConfiguration.Header], start: Int, body: WindowBody?,
        _ configuration: UploadConfiguration, session: SegmentSession, since requestStart: UploadClock.Instant
    ) async -> Exchanged {
        onEvent(.requestStarted(method: request.httpMethod ?? "POST", url: request.url ?? configuration.url, headers: fields))
        // A resumable PATCH gets a connection of its own: when a reused connection breaks before
        // the answer, libcurl re-sends the request by itself, headers first (with an
        // Upload-Offset that may be stale by then). A server such as Apple's NIOResumableUpload
        // answers 409 and destroys the upload, and a re-sent completion meets 404 from a server
        // that completed and forgot the upload (both measured; DesignNotes).
        let own: SegmentSession? =
            switch exchange {
            case .append, .complete: SegmentSession(configuration)
            case .segment, .create, .checkOffset: nil
            }
        defer { own?.invalidate() }
        if let body { state.withLock { $0.sending[body.range.lowerBound] = body } }
        defer {
            if let body {
                let reached = min(body.range.upperBound, body.range.lowerBound + body.bytesSent)
                state.withLock { state in
                    state.sending[body.range.lowerBound] = nil
                    state.sentEnd = max(state.sentEnd, reached)
                }
            }
        }
        do {
            let response = try await (own ?? session).send(request, body: body, onEvent: onEvent)
            // The server answered the request, which held the whole segment.
            let carried = body?.range ?? start..<start
            if let body, response.isSuccess, body.bytesSent < body.length {
                // libcurl stopped reading the body when the answer ended: the server answered
                // before it had the rest, so it cannot hold it (a server that reads only the head).
                let error = StreamUpError(
                    .protocolError,
                    "the server answered \(response.statusCode) before the request body ended, after \(body.bytesSent) of its \(counted(body.length, "byte")): "
                        + "it did not read the rest, so the segment is not delivered")
                return (.failed(Machine.Failure(kind: .earlyAnswer, message: error.description), carried: carried), nil, error)
            }
            var answer = answer(response, to: request)
            answer.took = requestStart.duration(to: clock.now)
            if case .segment = exchange, let partial = partial(in: response, carried: carried) {
                answer.partial = partial
                if partial.backoff {
                    // What was not processed is retried as the overload it was: a give-up
                    // reports it as such, not as the 2xx the request got.
                    return (.answered(answer, carried: carried), response.withStatus(429), nil)
                }
            }
            return (.answered(answer, carried: carried), response, nil)
        } catch {
            let failure = error as? StreamUpError ?? StreamUpError(.transport, "\(error)")
            // A segment whose body started out may have reached the server (a lost answer).
            let carried = body.flatMap { $0.bytesSent > 0 ? $0.range : nil } ?? start..<start
            return (.failed(Self.failure(failure), carried: carried), nil, failure)
        }
    }

    /// The request for `exchange` (UploadRequest builds every field), its header fields for
    /// `-v`, and the stream offset it starts at.
    private func build(
        _ exchange: Machine.Exchange, _ configuration: UploadConfiguration, target: Target?, bodyLength: Int?
    ) -> (URLRequest, [UploadConfiguration.Header], Int) {
        let (purpose, start): (UploadRequest.Purpose, Int) =
            switch exchange {
            case .segment(let from, _): (.segment(stream: target?.streamName ?? streamID, offset: target?.offset ?? (from - skippedBytes)), from)
            case .create(let base): (.create(stream: streamID, offset: base - skippedBytes), base)
            case .checkOffset(let upload): (.checkOffset(upload: upload.url), upload.base)
            case .append(let upload, let from, _): (.append(upload: upload.url, offset: from - upload.base), from)
            case .complete(let upload, let end): (.complete(upload: upload.url, offset: end - upload.base), end)
            }
        let (request, fields) = UploadRequest.make(purpose, configuration, bodyLength: bodyLength)
        return (request, fields, start)
    }

    /// The segment from `from`: the one cut last when it starts there and fits `limits` (a
    /// resend, also the first one after a restart from the spool, carries the same records,
    /// byte for byte, so that a receiver that drops an identical insert drops it), else a new
    /// cut, kept in the spool before it is sent.
    private func cutSegment(from: Int, limits: SegmentLimits) async throws -> Range<Int> {
        if let cut = state.withLock({ $0.cuts.first { $0.lowerBound == from } }), cut.count <= limits.maxBytes {
            return cut
        }
        let cut = try await buffer.cutSegment(from: from, limits: limits)
        let acknowledged = buffer.acknowledgedOffset
        let cuts = state.withLock { state in
            // Cuts acknowledged meanwhile, and the one this replaces, are not needed again.
            state.cuts.removeAll { $0.upperBound <= acknowledged || $0.lowerBound == from }
            state.cuts.append(cut)
            state.cuts.sort { $0.lowerBound < $1.lowerBound }
            return state.cuts
        }
        try spool?.saveCuts(cuts)
        return cut
    }

    /// Bytes set aside before the current offset (see `State.skipped`).
    private var skippedBytes: Int { state.withLock { $0.skipped } }

    /// The parts of `response` the machine looks at.
    private func answer(_ response: UploadResponse, to request: URLRequest) -> Machine.Answer {
        var location: String?
        if let value = response.value(forHeader: "Location"), let base = request.url,
            let url = URL(string: value, relativeTo: base)?.absoluteURL, url.scheme == "http" || url.scheme == "https"
        {
            location = url.absoluteString
        }
        return Machine.Answer(
            status: response.statusCode, retryAfter: response.value(forHeader: "Retry-After"),
            uploadOffset: response.uploadOffset,
            uploadComplete: response.uploadComplete,
            location: location,
            firstLine: response.isSuccess ? nil : response.firstLine(),
            permanent: options.answerReader?.isPermanent(response) ?? false)
    }

    /// What kind of failure `error` is, for the retry policy: TLS certificate failures and
    /// bodies that cannot be sent are final (retrying cannot fix them), cancellation stops, the
    /// rest is retried.
    static func failure(_ error: StreamUpError) -> Machine.Failure {
        if error.code == .cancelled { return Machine.Failure(kind: .cancelled, message: error.description) }
        // On Linux a certificate failure is code -1 with libcurl's text (TransportFailure).
        if let urlError = error.urlError, TransportFailure.isCertificateFailure(code: urlError.code.rawValue, text: urlError.localizedDescription) {
            return Machine.Failure(kind: .certificate, message: error.description)
        }
        // A body that cannot be sent as configured (records holding the multipart boundary)
        // fails the same way every time.
        if error.code == .invalidConfiguration { return Machine.Failure(kind: .unsendable, message: error.description) }
        return Machine.Failure(kind: .transport, message: error.description)
    }
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
