import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One exchange with the server, from the cut to the outcome the delivery machine reads, as
/// async-http-client's `Transaction` owns one request: the machine plans it (a plain segment,
/// or a step of the resumable protocol), and this type carries it through its stages, each a
/// value of its own, so a stage can only follow the one before it:
///
/// ```
///   UploadExchange ── cut() ──▶ the segment's range (waits for its records)
///        │
///        └── start(segment) ──▶ Sending: the body built complete, the request made,
///                                 the transport's call under way
///                                     │
///                                     └── outcome() ──▶ Outcome: the machine's result, the
///                                                       answer if one came, the error if not
/// ```
///
/// Thread safety: a value type; its stages are values too (a started call is the transport's,
/// safe from any thread).
struct UploadExchange: Sendable {
    typealias Machine = DeliveryMachine<UploadClock.Instant>

    /// What every exchange of one upload shares.
    ///
    /// Thread safety: a value type over thread-safe parts (the buffer's lock, the transport).
    struct Context: Sendable {
        let buffer: ReplayBuffer
        let configuration: UploadConfiguration
        let streamID: String
        /// Reads a segment's answer for records the receiver refused while it stored the others.
        let answerReader: AnswerReader?
        let transport: any ExchangeTransport
        let clock: UploadClock
        /// Hears what happens, redacting it first (``UploadEvent/redacted``).
        let onEvent: @Sendable (UploadEvent) -> Void
        /// Hears events redacted already (a template's: the same fields each time, redacted once).
        let onRedactedEvent: @Sendable (UploadEvent) -> Void
        /// The bodies out now, for the bytes sent so far.
        let sending: SendingBodies
        /// Before a plain segment goes out: what must be saved first (the time bases of its lines).
        let beforeSegment: @Sendable () -> Void
        /// The names of the records of a segment for an envelope that names them (nil: by place).
        let recordNames: @Sendable (Range<Int>) -> RecordNames?
    }

    /// Where a plain segment goes: the endpoint's URL, and the stream name and offset of its
    /// first byte there (``EndpointSet``).
    ///
    /// Thread safety: a value type.
    struct Target: Sendable {
        var url: URL
        var streamName: String
        var offset: Int
    }

    /// How an exchange ended: the machine's result, the answer if one came, the error if none did.
    ///
    /// Thread safety: a value type.
    struct Outcome: Sendable {
        var result: Machine.Result
        var response: UploadResponse?
        var error: StreamUpError?
    }

    /// What the machine asked for.
    let planned: Machine.Exchange
    /// The endpoint a plain segment goes to (nil: the configuration's URL).
    let endpoint: Int?
    let target: Target?
    /// What every plain segment to the target shares, built once (nil: built for each request).
    let template: UploadRequest.SegmentTemplate?
    /// Bytes set aside as dead letters before this exchange: offsets the receiver sees leave them out.
    let skipped: Int
    let context: Context

    /// The stream offset the exchange starts at.
    var start: Int {
        switch planned {
        case .segment(let from, _), .append(_, let from, _): from
        case .create(let at), .complete(_, let at): at
        case .checkOffset(let upload): upload.base
        }
    }

    /// Whether the exchange carries records, cut from the buffer first.
    var needsCut: Bool {
        switch planned {
        case .segment, .append: true
        case .create, .checkOffset, .complete: false
        }
    }

    // MARK: Cut

    /// The records the exchange carries: `kept` (the cut the machine remembers for a plain
    /// segment sent again, byte for byte the same), or a new cut that waits in this task for
    /// its records (``ReplayBuffer/cutSegment(from:limits:)``; no suspension when they are
    /// there); nil for an exchange without a body.
    func cut(reusing kept: Range<Int>?) async -> Result<Range<Int>?, StreamUpError> {
        do {
            switch planned {
            case .segment(let from, let limits):
                let segment: Range<Int>
                if let kept { segment = kept } else { segment = try await context.buffer.cutSegment(from: from, limits: limits) }
                // The times of the lines it carries are saved before it is sent.
                context.beforeSegment()
                return .success(segment)
            case .append(_, let from, let limits): return .success(try await context.buffer.cutSegment(from: from, limits: limits))
            case .create, .checkOffset, .complete: return .success(nil)
            }
        } catch {
            return .failure(error as? StreamUpError ?? StreamUpError(.cancelled, "the upload was cancelled"))
        }
    }

    /// The outcome of an exchange whose cut failed.
    func cutFailed(_ failure: StreamUpError) -> Outcome {
        Outcome(result: .failed(Machine.Failure(failure), carried: start..<start), response: nil, error: failure)
    }

    // MARK: Body and request

    /// Builds the body of `segment` and the request, and starts it on the transport. A body
    /// that cannot be built fails the same way every time: the outcome is then known already
    /// (what it holds is the segment a dead letter sets aside).
    func start(_ segment: Range<Int>?) -> Sending {
        let began = context.clock.now
        let body: WindowBody?
        var configuration = context.configuration
        do {
            if template == nil {
                configuration = try configuration.resolvingHeaders()
                if let target { configuration.url = target.url }
            }
            body = try segment.map {
                try WindowBody(
                    $0, of: context.buffer, encoding: configuration.body, allowsResend: planned.isPlainSegment, streamID: context.streamID,
                    names: context.recordNames($0))
            }
        } catch {
            let failure = error as? StreamUpError ?? StreamUpError(.io, "\(error)")
            return Sending(exchange: self, stage: .ended(Outcome(result: .failed(Machine.Failure(failure), carried: segment ?? 0..<0), error: failure)))
        }
        let request: URLRequest
        if let template, let target, let body {
            let started: UploadEvent
            (request, started) = template.make(stream: target.streamName, offset: target.offset, bodyLength: body.length)
            context.onRedactedEvent(started)
        } else {
            let fields: [UploadConfiguration.Header]
            (request, fields) = UploadRequest.make(purpose, configuration, bodyLength: body?.length)
            context.onEvent(.requestStarted(method: request.httpMethod ?? "POST", url: request.url ?? configuration.url, headers: fields))
        }
        if let body { context.sending.began(body) }
        // A resumable PATCH gets a connection of its own: when a reused connection breaks before
        // the answer, libcurl re-sends the request by itself, headers first (with an
        // Upload-Offset that may be stale by then). A server such as Apple's NIOResumableUpload
        // answers 409 and destroys the upload, and a re-sent completion meets 404 from a server
        // that completed and forgot the upload (both measured; DesignNotes).
        let call = context.transport.start(request, body: body, ownConnection: planned.needsOwnConnection, onEvent: context.onEvent)
        return Sending(exchange: self, stage: .out(call, request: request, body: body, began: began))
    }

    /// What the request is for, in the receiver's offsets.
    private var purpose: UploadRequest.Purpose {
        switch planned {
        case .segment(let from, _):
            .segment(stream: target?.streamName ?? context.streamID, offset: target?.offset ?? (from - skipped))
        case .create(let base): .create(stream: context.streamID, offset: base - skipped)
        case .checkOffset(let upload): .checkOffset(upload: upload.url)
        case .append(let upload, let from, _): .append(upload: upload.url, offset: from - upload.base)
        case .complete(let upload, let end): .complete(upload: upload.url, offset: end - upload.base)
        }
    }

    /// An exchange whose request is under way (or that ended before one could start).
    ///
    /// Thread safety: a value type over the transport's call, safe from any thread.
    struct Sending: Sendable {
        enum Stage: Sendable {
            case out(any ExchangeCall, request: URLRequest, body: WindowBody?, began: UploadClock.Instant)
            case ended(Outcome)
        }
        let exchange: UploadExchange
        let stage: Stage

        /// Waits for the answer and reads it: what the machine makes of it.
        func outcome() async -> Outcome {
            switch stage {
            case .ended(let outcome):
                return outcome
            case .out(let call, let request, let body, let began):
                let answered = await call.outcome()
                if let body { exchange.context.sending.ended(body) }
                return exchange.read(answered, to: request, body: body, since: began)
            }
        }
    }

    // MARK: Answer

    /// What came of the request that carried `body`: the answer as the machine reads it (with
    /// the records a receiver refused, read from the buffer), or why none came.
    private func read(
        _ answered: Result<UploadResponse, StreamUpError>, to request: URLRequest, body: WindowBody?, since began: UploadClock.Instant
    ) -> Outcome {
        switch answered {
        case .success(let response):
            // The server answered the request, which held the whole segment.
            let carried = body?.range ?? start..<start
            if let body, let early = Machine.Failure.earlyAnswer(response, sent: body.bytesSent, of: body.length) {
                return Outcome(result: .failed(early, carried: carried), error: StreamUpError(.protocolError, early.message))
            }
            var answer = Machine.Answer(response, to: request.url, reader: context.answerReader)
            answer.took = began.duration(to: context.clock.now)
            if planned.isPlainSegment, let reader = context.answerReader,
                let partial = reader.partial(in: response, carried: carried, of: context.buffer)
            {
                answer.partial = partial
                if partial.backoff {
                    // What was not processed is retried as the overload it was: a give-up
                    // reports it as such, not as the 2xx the request got.
                    return Outcome(result: .answered(answer, carried: carried), response: response.withStatus(429))
                }
            }
            return Outcome(result: .answered(answer, carried: carried), response: response)
        case .failure(let failure):
            // A segment whose body started out may have reached the server (a lost answer).
            let carried = body.flatMap { $0.bytesSent > 0 ? $0.range : nil } ?? start..<start
            return Outcome(result: .failed(Machine.Failure(failure), carried: carried), error: failure)
        }
    }
}

extension DeliveryMachine.Exchange {
    /// A plain segment: its body may be sent again by libcurl, and a receiver may read it for
    /// partial failures.
    var isPlainSegment: Bool {
        if case .segment = self { true } else { false }
    }

    /// A resumable PATCH, which goes on a connection of its own.
    var needsOwnConnection: Bool {
        switch self {
        case .append, .complete: true
        case .segment, .create, .checkOffset: false
        }
    }
}
