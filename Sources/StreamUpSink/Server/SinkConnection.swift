#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Serves one client connection on its own thread: blocking `recv` into one fixed buffer, the
/// bytes fed to an ``HTTPRequestParser``, body ranges handed to a ``RequestBody`` without
/// copying, one response per request, one event per request.
///
/// Memory per connection: the receive buffer (``SinkConfiguration/readBufferSize``, 64 KiB by
/// default, allocated once; its pages become resident only as data lands in them), the thread
/// stack (512 KiB reserved, a few pages resident), the parser's line buffer (at most
/// ``SinkConfiguration/maxHeaderBytes``) and the current request's head. An idle connection costs
/// well under 100 KiB of resident memory. Nothing is sized from a length the client sent.
///
/// Timeouts: ``ConnectionDeadlines`` keeps the idle, request-head and body-rate clocks; before
/// each read the connection acts on the one that ran out, or sets `SO_RCVTIMEO` to the time left
/// (`SO_SNDTIMEO` is the idle timeout). Its ``ConnectionSlot`` tells the registry when a head is
/// awaited and when it arrived, so that it can shed the connection waiting longest when the slots
/// run out.
/// The event for a request is reported *before* its response is sent, so a client that has read
/// the response can rely on the event being in ``SinkServer/requests``.
///
/// Injected faults (``SinkFaults``) act here: the read throttle in the receive loop, drop and
/// stall once a request's body reaches their byte count, failures decided when a head arrives,
/// the forgetting of resumable uploads once their byte count is reached.
/// Stream de-duplication (``StreamStore``) runs when a complete body has been stored.
///
/// Resumable uploads: ``ResumableRequestHandler`` decides what a protocol request does; a request
/// attached to an upload hands each body piece to the upload as it arrives, and detaches from it
/// before the connection's descriptor is closed, however the request ends (see
/// ``ResumableUpload`` for why that order matters).
///
/// Thread safety: confined to its connection thread; never shared.
struct SinkConnection {
    /// Whether to keep reading after handling some input.
    enum Next {
        case keepReading
        case close
    }

    /// A request whose head has arrived.
    private struct InFlight {
        var sequence: Int
        var head: HTTPRequestHead
        var body: RequestBody
        var start: ContinuousClock.Instant
        /// Answer this after discarding the body (an injected failure, a refused or answered
        /// resumable-upload request).
        var prepared: PreparedResponse?
        /// The de-duplicated stream this body belongs to.
        var stream: (id: String, offset: Int)?
        /// The most body bytes this request may carry (``SinkConfiguration/maxBodyBytes``, less
        /// what its resumable upload holds); `nil` for no limit.
        var bodyLimit: Int?
    }

    let context: SinkServerContext
    let peer: String
    /// This connection's place in the registry (waiting for a head, inside a request, shed).
    let slot: ConnectionSlot
    private var parser: HTTPRequestParser
    private var request: InFlight?
    /// The resumable upload the request in flight creates or appends to.
    private var attached: ResumableRequestHandler.Attached?
    /// When the first byte of the message being parsed arrived.
    private var messageStart: ContinuousClock.Instant?
    /// The idle, request-head and body-rate clocks.
    private var deadlines: ConnectionDeadlines

    private init(context: SinkServerContext, slot: ConnectionSlot, peer: String) {
        self.context = context
        self.slot = slot
        self.peer = peer
        parser = HTTPRequestParser(limits: context.parserLimits)
        let configuration = context.configuration
        deadlines = ConnectionDeadlines(
            idleTimeout: configuration.idleTimeout, headTimeout: configuration.headTimeout,
            bodyRate: configuration.minimumBodyRate, start: .now)
    }

    /// The connection thread's body: takes ownership of `descriptor`, serves until the
    /// connection ends, deregisters and closes.
    static func serve(descriptor: CInt, slot: ConnectionSlot, peer: String, context: SinkServerContext) {
        let socket = Socket(owning: descriptor)
        var connection = SinkConnection(context: context, slot: slot, peer: peer)
        connection.run(socket)
        connection.releaseUpload()
        context.registry.remove(slot)
        socket.close()
    }

    private mutating func run(_ socket: borrowing Socket) {
        do {
            try socket.setNonBlocking(false)
            try socket.setTimeouts(context.configuration.idleTimeout)
            try socket.setOption(CInt(IPPROTO_TCP), TCP_NODELAY, 1 as CInt, name: "setsockopt(TCP_NODELAY)")
        } catch {
            return
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(
            byteCount: context.configuration.readBufferSize, alignment: 64)
        defer { buffer.deallocate() }
        let rate = context.configuration.faults.readBytesPerSecond
        // A throttled connection reads at most a twentieth of a second's worth at a time.
        let readSize = rate.map { max(1, min(buffer.count, $0 / 20)) } ?? buffer.count
        let readTarget = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<readSize])
        let connectionStart = ContinuousClock.now
        var totalRead = 0
        var receiveTimeout = context.configuration.idleTimeout
        while true {
            let now = ContinuousClock.now
            let progress = parser.progress
            if let expiry = deadlines.expiry(at: now, progress: progress) {
                expire(expiry, socket)
                return
            }
            // Re-arm SO_RCVTIMEO only when it is well off the next deadline, not on every read.
            let wait = deadlines.wait(at: now, progress: progress)
            if receiveTimeout > wait + wait / 8 || receiveTimeout < wait / 2 {
                do {
                    try socket.setReceiveTimeout(wait)
                } catch {
                    abort(failure: "setting the receive timeout failed: \(error.details)")
                    return
                }
                receiveTimeout = wait
            }
            let received: Socket.ReceiveResult
            do {
                received = try socket.receive(into: readTarget)
            } catch {
                abort(failure: "receive failed: \(error.details)")
                return
            }
            let after = ContinuousClock.now
            deadlines.waited(after - now, owed: progress == .owingBody)
            switch received {
            case .bytes(let count):
                deadlines.received(count, at: after)
                if messageStart == nil {
                    messageStart = after
                    deadlines.messageStarted(at: after)
                }
                if let rate {
                    totalRead += count
                    throttle(until: connectionStart + .seconds(Double(totalRead) / Double(rate)))
                }
                let input = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
                guard process(input, socket) == .keepReading else { return }
            case .endOfFile:
                if !context.isStopping && slot.wasShed {
                    shed(socket)
                    return
                }
                abort(failure: context.isStopping ? "server stopped" : "client closed the connection")
                return
            case .timedOut:
                // A clock may have run out, or the timeout was set short; the loop's top decides.
                continue
            }
        }
    }

    /// Feeds `input` to the parser and acts on each event until it needs more bytes.
    private mutating func process(_ input: UnsafeRawBufferPointer, _ socket: borrowing Socket) -> Next {
        var offset = 0
        while true {
            let rest = UnsafeRawBufferPointer(rebasing: input[offset...])
            let step: (event: HTTPRequestParser.Event, consumed: Int)
            do {
                step = try parser.parse(rest)
            } catch {
                reject(status: error.status, reason: error.reason, socket)
                return .close
            }
            offset += step.consumed
            switch step.event {
            case .needMoreData:
                if parser.isAtMessageStart {
                    messageStart = nil
                }
                return .keepReading
            case .head(let head):
                guard slot.headArrived() else {
                    shed(socket)
                    return .close
                }
                deadlines.headArrived()
                guard begin(head, socket) == .keepReading, injectByteFault(socket) == .keepReading else { return .close }
            case .body(let range):
                let bytes = UnsafeRawBufferPointer(rebasing: rest[range])
                // Stop at an armed fault's byte count, so the fault sees exactly that many bytes.
                var split = bytes.count
                if let threshold = armedFaultThreshold(), let received = request?.body.byteCount,
                   threshold >= received, threshold - received < split {
                    split = threshold - received
                }
                guard appendBody(UnsafeRawBufferPointer(rebasing: bytes[..<split]), socket) == .keepReading,
                      injectByteFault(socket) == .keepReading,
                      appendBody(UnsafeRawBufferPointer(rebasing: bytes[split...]), socket) == .keepReading
                else { return .close }
            case .end(let trailers):
                // Idle from now on, as far as shedding goes: said before the answer goes out, so
                // a client that has read it finds the registry already knowing.
                deadlines.messageEnded()
                slot.awaitingHead(since: .now)
                guard finish(trailers: trailers, socket) == .keepReading else { return .close }
                messageStart = nil
                if offset < input.count {
                    // Pipelined: the next request's first bytes are already here.
                    messageStart = .now
                    deadlines.messageStarted(at: .now)
                }
            }
        }
    }

    /// Appends body bytes to the request in flight (and to its resumable upload); rejects it
    /// when that fails.
    private mutating func appendBody(_ bytes: UnsafeRawBufferPointer, _ socket: borrowing Socket) -> Next {
        guard !bytes.isEmpty else { return .keepReading }
        // Read fields in place: a copy of the request would make the next append copy a body
        // kept in memory.
        guard let received = request?.body.byteCount else {
            preconditionFailure("parser sent body bytes outside a request")
        }
        if let limit = request?.bodyLimit, received + bytes.count > limit {
            // Keep exactly the bytes up to the limit, then refuse.
            let fits = max(0, limit - received)
            guard appendBody(UnsafeRawBufferPointer(rebasing: bytes[..<fits]), socket) == .keepReading else { return .close }
            let what = attached == nil ? "the body" : "the upload"
            let limitText = context.configuration.maxBodyBytes.map(String.init) ?? "?"
            reject(status: 413, reason: "\(what) exceeds the limit of \(limitText) bytes", socket)
            return .close
        }
        context.faultState.countBody(bytes.count)
        var bytes = bytes
        var forgetting = false
        if let attached {
            if let upTo = context.faultState.claimForget(adding: bytes.count) {
                bytes = UnsafeRawBufferPointer(rebasing: bytes[..<upTo])
                forgetting = true
            }
            let outcome: ResumableUpload.AppendOutcome
            do {
                outcome = try attached.upload.append(bytes, by: attached.attachment)
            } catch {
                reject(status: 500, reason: "storing the upload failed: \(error.details)", socket)
                return .close
            }
            switch outcome {
            case .appended:
                break
            case .detached:
                reportUnfinished(status: 0, failure: "upload taken over by another request")
                return .close
            case .ended:
                reportUnfinished(status: 0, failure: "upload cancelled or forgotten meanwhile")
                return .close
            }
        }
        do {
            try request?.body.append(bytes)
        } catch {
            switch error {
            case .storage(let storageError):
                reject(status: 500, reason: "storing the body failed: \(storageError.details)", socket)
            case .memoryLimitExceeded(let limit):
                reject(status: 413, reason: "body exceeds \(limit) bytes kept in memory", socket)
            }
            return .close
        }
        if forgetting {
            return forgetUploads(socket)
        }
        return .keepReading
    }

    /// A head arrived: number the request, refuse a declared body over the limit, open its file
    /// (or its resumable upload), and send `100 Continue` if asked.
    private mutating func begin(_ head: HTTPRequestHead, _ socket: borrowing Socket) -> Next {
        let sequence = context.nextSequence()
        var resumable: ResumableRequest?
        var invalid: ResumableRequest.Invalid?
        do {
            resumable = try ResumableRequest.identify(head)
        } catch {
            invalid = error
        }
        let allowance = bodyAllowance(resumable)
        if let allowance, case .length(let declared) = head.framing, declared > allowance {
            request = InFlight(sequence: sequence, head: head, body: makeBody(file: nil), start: messageStart ?? .now)
            reject(status: 413, reason: SinkConnection.declaredTooLarge(declared, allowance: allowance, resumable), socket)
            return .close
        }
        let next: Next
        if context.faultState.claimFailure() {
            next = prepare(injectedFailure(head), head: head, sequence: sequence, socket)
        } else if let invalid {
            next = prepare(ResumableResponses.invalid(invalid.reason), head: head, sequence: sequence, socket)
        } else if let resumable {
            next = beginResumable(resumable, head: head, sequence: sequence, socket)
        } else {
            next = beginPlain(head, sequence: sequence, socket)
        }
        request?.bodyLimit = allowance
        return next
    }

    /// The body bytes a request may carry: ``SinkConfiguration/maxBodyBytes``, less what the
    /// resumable upload it appends to already holds; `nil` without a limit.
    private func bodyAllowance(_ resumable: ResumableRequest?) -> Int? {
        guard let limit = context.configuration.maxBodyBytes else { return nil }
        if case .append(_, let offset, _) = resumable?.kind {
            return max(0, limit - offset)
        }
        return limit
    }

    /// Why a declared `Content-Length` is refused.
    private static func declaredTooLarge(_ declared: Int, allowance: Int, _ resumable: ResumableRequest?) -> String {
        guard case .append(_, let offset, _) = resumable?.kind else {
            return "the body of \(declared) bytes exceeds the limit of \(allowance) bytes"
        }
        return "the upload would hold \(offset + declared) bytes, over the limit of \(offset + allowance) bytes"
    }

    /// An ordinary request's head: open its file and send `100 Continue` if asked.
    private mutating func beginPlain(_ head: HTTPRequestHead, sequence: Int, _ socket: borrowing Socket) -> Next {
        var stream: (id: String, offset: Int)?
        if context.streams != nil {
            do {
                stream = try SinkConnection.streamHeaders(head)
            } catch {
                request = InFlight(sequence: sequence, head: head, body: makeBody(file: nil), start: messageStart ?? .now)
                reject(status: 400, reason: error.reason, socket)
                return .close
            }
        }
        var file: BodyFile?
        if let storage = context.storage, head.framing != .none {
            do {
                file = try storage.createFile(sequence: sequence, method: head.method)
            } catch {
                request = InFlight(sequence: sequence, head: head, body: makeBody(file: nil), start: messageStart ?? .now)
                reject(status: 500, reason: "storing the body failed: \(error.details)", socket)
                return .close
            }
        }
        request = InFlight(sequence: sequence, head: head, body: makeBody(file: file), start: messageStart ?? .now)
        request?.stream = stream
        return sendContinueIfAsked(head, socket)
    }

    /// A resumable-upload head arrived: create, attach, or prepare the answer.
    private mutating func beginResumable(
        _ resumable: ResumableRequest, head: HTTPRequestHead, sequence: Int, _ socket: borrowing Socket
    ) -> Next {
        var handler = ResumableRequestHandler(
            uploads: context.uploads, bindsStreams: context.streams != nil, origin: context.origin)
        handler.conflictForgets = context.configuration.faults.conflictForgetsUpload
        let attachment = ResumableUpload.Attachment(request: sequence, descriptor: socket.descriptor)
        let start: ResumableRequestHandler.Start
        do {
            start = try handler.start(resumable, head: head, attachment: attachment)
        } catch {
            request = InFlight(sequence: sequence, head: head, body: makeBody(file: nil), start: messageStart ?? .now)
            reject(status: 500, reason: "storing the upload failed: \(error.details)", socket)
            return .close
        }
        switch start {
        case .respond(let response):
            return prepare(response, head: head, sequence: sequence, socket)
        case .attached(let upload):
            attached = upload
            request = InFlight(
                sequence: sequence, head: head, body: makeBody(file: nil, uploading: true), start: messageStart ?? .now)
            // No 1xx to an HTTP/1.0 client (RFC 9110 §15.2).
            if let location = upload.location, context.configuration.sendsUploadResumptionSupported,
               head.minorVersion >= 1 {
                do {
                    try socket.send(ResumableResponses.resumptionSupported(location: location, version: upload.version))
                } catch {
                    abort(failure: "sending 104 Upload Resumption Supported failed: \(error.details)")
                    return .close
                }
            }
            return sendContinueIfAsked(head, socket)
        }
    }

    /// Starts a request that is answered `response` once its body has been read and discarded.
    private mutating func prepare(
        _ response: PreparedResponse, head: HTTPRequestHead, sequence: Int, _ socket: borrowing Socket
    ) -> Next {
        var refused = InFlight(
            sequence: sequence, head: head,
            body: RequestBody(hash: false, file: nil, keepInMemory: false, memoryLimit: 0),
            start: messageStart ?? .now)
        refused.prepared = response
        request = refused
        return sendContinueIfAsked(head, socket)
    }

    /// The answer to a request chosen by ``SinkFaults/failNextRequests``.
    private func injectedFailure(_ head: HTTPRequestHead) -> PreparedResponse {
        let faults = context.configuration.faults
        let status = faults.failStatus
        let reason = "injected fault: answering \(status)"
        var headers = faults.retryAfterValue.map { [SinkHeaderField(name: "Retry-After", value: String($0))] } ?? []
        if head.headers.first(named: ResumableRequest.versionField) != nil {
            headers.append(ResumableResponses.versionField(ResumableRequest.defaultVersion))
        }
        return PreparedResponse(
            status: status, headers: headers, json: HTTPResponse.error(status: status, reason: reason), failure: reason)
    }

    /// Sends `100 Continue` when the client waits for it.
    private mutating func sendContinueIfAsked(_ head: HTTPRequestHead, _ socket: borrowing Socket) -> Next {
        if head.expectsContinue && head.hasBody && head.minorVersion >= 1 {
            do {
                try socket.send(HTTPResponse.continueInterim)
            } catch {
                abort(failure: "sending 100 Continue failed: \(error.details)")
                return .close
            }
        }
        return .keepReading
    }

    /// The body of an ordinary request, or (`uploading`) of one attached to a resumable upload,
    /// which stores and hashes the bytes itself.
    private func makeBody(file: BodyFile?, uploading: Bool = false) -> RequestBody {
        let configuration = context.configuration
        return RequestBody(
            hash: configuration.hashBodies && !uploading, file: file,
            keepInMemory: configuration.keepBodiesInMemory, memoryLimit: configuration.maxBodyBytesInMemory)
    }

    /// The request ended: store, report, answer.
    private mutating func finish(trailers: [SinkHeaderField], _ socket: borrowing Socket) -> Next {
        guard let finished = request.take() else {
            preconditionFailure("parser ended a request that never began")
        }
        var summary = finished.body.finish(complete: true)
        let keepAlive = finished.head.keepAlive && !context.isStopping
        if let prepared = finished.prepared {
            report(finished, summary, trailers: trailers, status: prepared.status, failure: prepared.failure)
            let response = prepared.bytes(close: !keepAlive, isHead: finished.head.method == "HEAD")
            return (try? socket.send(response)) == nil ? .close : (keepAlive ? .keepReading : .close)
        }
        if let upload = attached.take() {
            return finishUpload(upload, finished, summary, trailers: trailers, keepAlive: keepAlive, socket)
        }
        var storageError = summary.storageError
        var streamOffset: Int?
        if storageError == nil, let stream = finished.stream, let streams = context.streams, let bodyPath = summary.storedFile {
            do {
                let outcome = try streams.merge(
                    streamID: stream.id, offset: stream.offset, bodyPath: bodyPath, bodyLength: summary.byteCount)
                _ = unlink(bodyPath)
                switch outcome {
                case .appended(let length):
                    streamOffset = length
                    summary.storedFile = streams.path(forStreamID: stream.id)
                case .gap(let expected):
                    summary.storedFile = nil
                    report(finished, summary, trailers: trailers, status: 409, failure: "gap in stream: expected offset \(expected)")
                    let response = HTTPResponse.json(
                        status: 409, body: HTTPResponse.streamGap(expectedOffset: expected), close: !keepAlive)
                    return (try? socket.send(response)) == nil ? .close : (keepAlive ? .keepReading : .close)
                }
            } catch {
                storageError = error
            }
        }
        if let storageError {
            report(finished, summary, trailers: trailers, status: 500, failure: "storing the body failed: \(storageError.details)")
            sendError(status: 500, reason: "storing the body failed", socket)
            lingeringClose(socket)
            return .close
        }
        if context.faultState.claimLostAnswer() { return loseAnswer(finished, summary, trailers: trailers, socket) }
        let event = report(finished, summary, trailers: trailers, status: 200, failure: nil)
        let response = HTTPResponse.json(
            status: 200, body: HTTPResponse.summary(of: event, streamOffset: streamOffset), close: !keepAlive)
        do {
            try socket.send(response)
        } catch {
            return .close
        }
        return keepAlive ? .keepReading : .close
    }

    /// An attached request ended: complete the upload (`200` with the usual summary, for the
    /// whole upload) or answer `201` with the bytes held.
    private mutating func finishUpload(
        _ upload: ResumableRequestHandler.Attached, _ finished: InFlight, _ summary: RequestBody.Summary,
        trailers: [SinkHeaderField], keepAlive: Bool, _ socket: borrowing Socket
    ) -> Next {
        let handler = ResumableRequestHandler(
            uploads: context.uploads, bindsStreams: context.streams != nil, origin: context.origin)
        var summary = summary
        summary.storedFile = upload.upload.file
        let end: ResumableRequestHandler.End
        do {
            end = try handler.end(upload)
        } catch {
            report(finished, summary, trailers: trailers, status: 500, failure: "storing the upload failed: \(error.details)")
            sendError(status: 500, reason: "storing the upload failed", socket)
            lingeringClose(socket)
            return .close
        }
        let response: [UInt8]
        switch end {
        case .completed(let completion, let headers):
            summary.sha256 = completion.sha256
            summary.storedFile = completion.storedFile
            if context.faultState.claimLostAnswer() { return loseAnswer(finished, summary, trailers: trailers, socket) }
            var whole = report(finished, summary, trailers: trailers, status: 200, failure: nil, uploadOffset: completion.byteCount)
            whole.bodyByteCount = completion.byteCount
            response = HTTPResponse.json(
                status: 200, body: HTTPResponse.summary(of: whole, streamOffset: completion.streamOffset),
                close: !keepAlive, extraHeaders: headers)
        case .incomplete(let held, let headers):
            report(finished, summary, trailers: trailers, status: 201, failure: nil, uploadOffset: held)
            response = HTTPResponse.empty(status: 201, close: !keepAlive, extraHeaders: headers)
        case .gone(let prepared):
            report(finished, summary, trailers: trailers, status: prepared.status, failure: "upload cancelled or forgotten meanwhile")
            response = prepared.bytes(close: !keepAlive, isHead: false)
        case .cut(let reason):
            report(finished, summary, trailers: trailers, status: 0, failure: reason)
            return .close
        }
        return (try? socket.send(response)) == nil ? .close : (keepAlive ? .keepReading : .close)
    }

    /// Injected fault: the request was stored, but its answer is lost (the connection is reset).
    private func loseAnswer(
        _ finished: InFlight, _ summary: RequestBody.Summary, trailers: [SinkHeaderField], _ socket: borrowing Socket
    ) -> Next {
        report(finished, summary, trailers: trailers, status: 0, failure: "injected fault: stored, answer lost", complete: true)
        try? socket.setOption(SOL_SOCKET, SO_LINGER, linger(l_onoff: 1, l_linger: 0), name: "setsockopt(SO_LINGER)")
        return .close
    }

    /// The request cannot go on: report it with `status`, answer, and close gracefully.
    private mutating func reject(status: Int, reason: String, _ socket: borrowing Socket) {
        reportUnfinished(status: status, failure: reason)
        sendError(status: status, reason: reason, socket)
        lingeringClose(socket)
    }

    /// A clock ran out (see ``ConnectionDeadlines``): answer `408` if a request had begun, and close.
    private mutating func expire(_ expiry: ConnectionDeadlines.Expiry, _ socket: borrowing Socket) {
        guard request != nil || !parser.isAtMessageStart else { return }
        let configuration = context.configuration
        let reason = switch expiry {
        case .idle:
            "no data for \(configuration.idleTimeout)"
        case .head:
            "request head not complete within \(configuration.headTimeout)"
        case .bodyRate:
            "body arrived slower than \(configuration.minimumBodyRate?.bytesPerSecond ?? 0) bytes per second"
        }
        reject(status: 408, reason: reason, socket)
    }

    /// The connection was shed to make room for a newer one (see ``ConnectionRegistry``): answer
    /// `503` if a request had begun (without blocking: this client may not be reading), and close.
    private mutating func shed(_ socket: borrowing Socket) {
        guard request != nil || !parser.isAtMessageStart else { return }
        let reason = "shed at the connection limit: this request's head was the slowest to arrive"
        reportUnfinished(status: 503, failure: reason)
        let response = HTTPResponse.json(
            status: 503, body: HTTPResponse.error(status: 503, reason: reason), close: true,
            extraHeaders: [SinkHeaderField(name: "Retry-After", value: "1")])
        try? socket.send(response, flags: CInt(MSG_DONTWAIT))
        socket.shutdown(CInt(SHUT_WR))
    }

    /// The connection ended under a request (client gone, or the server stopping).
    private mutating func abort(failure: String) {
        guard request != nil || !parser.isAtMessageStart else { return }
        if let attached, let reason = attached.upload.cutReason(attached.attachment) {
            reportUnfinished(status: 0, failure: reason)
            return
        }
        reportUnfinished(status: 0, failure: failure)
    }

    /// Detaches the request in flight from its resumable upload (keeping every byte it stored);
    /// returns the bytes the upload holds, `nil` when there was none or it has ended.
    @discardableResult
    private mutating func releaseUpload() -> Int? {
        guard let current = attached.take() else { return nil }
        return current.upload.release(current.attachment)
    }

    /// Reports the request in flight (or the partial head) as incomplete, after detaching it
    /// from its resumable upload.
    private mutating func reportUnfinished(status: Int, failure: String) {
        let uploadFile = attached?.upload.file
        let held = releaseUpload()
        if let unfinished = request.take() {
            var summary = unfinished.body.finish(complete: false)
            summary.storedFile = uploadFile ?? summary.storedFile
            report(unfinished, summary, trailers: [], status: status, failure: failure, uploadOffset: held)
        } else {
            context.report(SinkRequestEvent(
                sequence: context.nextSequence(), method: "", path: "", version: "",
                headers: [], trailers: [], bodyByteCount: 0, sha256: nil, body: nil, storedFile: nil,
                duration: messageStart.map { .now - $0 } ?? .zero,
                status: status, isComplete: false, peer: peer, failure: failure))
        }
    }

    @discardableResult
    private func report(
        _ request: InFlight, _ summary: RequestBody.Summary, trailers: [SinkHeaderField], status: Int, failure: String?,
        uploadOffset: Int? = nil, complete: Bool? = nil
    ) -> SinkRequestEvent {
        let event = SinkRequestEvent(
            sequence: request.sequence, method: request.head.method, path: request.head.target,
            version: request.head.version, headers: request.head.headers, trailers: trailers,
            bodyByteCount: summary.byteCount, sha256: summary.sha256, body: summary.body,
            storedFile: summary.storedFile, duration: .now - request.start, status: status,
            isComplete: complete ?? (failure == nil), peer: peer, failure: failure, uploadOffset: uploadOffset)
        context.report(event)
        return event
    }

    private func sendError(status: Int, reason: String, _ socket: borrowing Socket) {
        let response = HTTPResponse.json(status: status, body: HTTPResponse.error(status: status, reason: reason), close: true)
        try? socket.send(response)
    }

    /// Half-closes, then reads and discards what the client still sends (up to 1 MiB, for at
    /// most the idle timeout or 2 s). Closing with unread input would make the kernel send a
    /// reset, which can destroy the error response before the client reads it.
    private func lingeringClose(_ socket: borrowing Socket) {
        socket.shutdown(CInt(SHUT_WR))
        try? socket.setTimeouts(min(context.configuration.idleTimeout, .seconds(2)))
        var scratch = [UInt8](repeating: 0, count: 16_384)
        var discarded = 0
        while discarded < 1 << 20 {
            let result = scratch.withUnsafeMutableBytes { try? socket.receive(into: $0) }
            guard case .bytes(let count) = result else { return }
            discarded += count
        }
    }

    // MARK: Injected faults and streams

    /// The smallest byte count at which an armed drop or stall fault would act on the request
    /// in flight, or `nil` when none can.
    private func armedFaultThreshold() -> Int? {
        guard let current = request, current.prepared == nil else { return nil }
        let state = context.faultState
        let drop = state.bytesUntilNextDrop.map { current.body.byteCount + $0 }
            ?? (state.isDropArmed ? state.faults.dropAfterBytes : nil)
        let stall = state.isStallArmed ? state.faults.stallAfterBytes : nil
        return [drop, stall].compactMap { $0 }.min()
    }

    /// Drops or stalls the connection when the request in flight has reached an armed fault's
    /// byte count and claims it; returns `.close` when it did.
    private mutating func injectByteFault(_ socket: borrowing Socket) -> Next {
        guard let current = request, current.head.hasBody, current.prepared == nil else { return .keepReading }
        let received = current.body.byteCount
        let state = context.faultState
        if state.claimDrop(received: received) {
            reportUnfinished(status: 0, failure: "injected fault: connection dropped after \(received) body bytes")
            // Linger 0: `close` sends a reset instead of a graceful end of file.
            try? socket.setOption(SOL_SOCKET, SO_LINGER, linger(l_onoff: 1, l_linger: 0), name: "setsockopt(SO_LINGER)")
            return .close
        }
        if let limit = state.faults.stallAfterBytes, received >= limit, state.claimStall() {
            let deadline = ContinuousClock.now + context.configuration.idleTimeout
            throttle(until: deadline)
            let why = context.isStopping ? "server stopped" : "idle timeout"
            reportUnfinished(status: 0, failure: "injected fault: stalled after \(received) body bytes (\(why))")
            return .close
        }
        return .keepReading
    }

    /// The request in flight carried byte ``SinkFaults/forgetUploadsAfterBytes`` of resumable
    /// uploads: forget them all, as a restart would, and reset this connection.
    private mutating func forgetUploads(_ socket: borrowing Socket) -> Next {
        let limit = context.configuration.faults.forgetUploadsAfterBytes ?? 0
        let uploadFile = attached?.upload.file
        let held = releaseUpload()
        context.uploads.forgetAll()
        guard let unfinished = request.take() else { return .close }
        var summary = unfinished.body.finish(complete: false)
        summary.storedFile = uploadFile
        report(
            unfinished, summary, trailers: [], status: 0,
            failure: "injected fault: resumable uploads forgotten after \(limit) upload bytes", uploadOffset: held)
        try? socket.setOption(SOL_SOCKET, SO_LINGER, linger(l_onoff: 1, l_linger: 0), name: "setsockopt(SO_LINGER)")
        return .close
    }

    /// Sleeps until `deadline` in steps of at most 20 ms, returning early when the server stops.
    private func throttle(until deadline: ContinuousClock.Instant) {
        while !context.isStopping {
            let left = deadline - .now
            guard left > .zero else { return }
            Thread.sleep(forTimeInterval: min(left, .milliseconds(20)).timeInterval)
        }
    }

    /// The `Streamup-Stream-Id` and `Streamup-Offset` of a request, or `nil` when it has neither.
    static func streamHeaders(_ head: HTTPRequestHead) throws(HTTPParseError) -> (id: String, offset: Int)? {
        let ids = head.headers.values(named: "streamup-stream-id")
        let offsets = head.headers.values(named: "streamup-offset")
        if ids.isEmpty && offsets.isEmpty { return nil }
        guard ids.count == 1, offsets.count == 1 else {
            throw .badRequest("a stream request needs exactly one Streamup-Stream-Id and one Streamup-Offset")
        }
        let id = ids[0].trimmingWhitespace()
        guard StreamStore.fileName(forStreamID: id) != nil else {
            throw .badRequest("empty Streamup-Stream-Id")
        }
        let text = offsets[0].trimmingWhitespace()
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }), let offset = Int(text) else {
            throw .badRequest("Streamup-Offset is not a non-negative integer")
        }
        return (id, offset)
    }
}

private extension Duration {
    var timeInterval: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
