#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
/// Timeouts come from `SO_RCVTIMEO`/`SO_SNDTIMEO` (``SinkConfiguration/idleTimeout``).
/// The event for a request is reported *before* its response is sent, so a client that has read
/// the response can rely on the event being in ``SinkServer/requests``.
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
    }

    let context: SinkServerContext
    let peer: String
    private var parser: HTTPRequestParser
    private var request: InFlight?
    /// When the first byte of the message being parsed arrived.
    private var messageStart: ContinuousClock.Instant?

    private init(context: SinkServerContext, peer: String) {
        self.context = context
        self.peer = peer
        parser = HTTPRequestParser(limits: context.parserLimits)
    }

    /// The connection thread's body: takes ownership of `descriptor`, serves until the
    /// connection ends, deregisters and closes.
    static func serve(descriptor: CInt, peer: String, context: SinkServerContext) {
        let socket = Socket(owning: descriptor)
        var connection = SinkConnection(context: context, peer: peer)
        connection.run(socket)
        context.registry.remove(descriptor)
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
        while true {
            let received: Socket.ReceiveResult
            do {
                received = try socket.receive(into: buffer)
            } catch {
                abort(failure: "receive failed: \(error)")
                return
            }
            switch received {
            case .bytes(let count):
                if messageStart == nil {
                    messageStart = .now
                }
                let input = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
                guard process(input, socket) == .keepReading else { return }
            case .endOfFile:
                abort(failure: context.isStopping ? "server stopped" : "client closed the connection")
                return
            case .timedOut:
                timeOut(socket)
                return
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
                guard begin(head, socket) == .keepReading else { return .close }
            case .body(let range):
                do {
                    try request!.body.append(UnsafeRawBufferPointer(rebasing: rest[range]))
                } catch {
                    switch error {
                    case .storage(let storageError):
                        reject(status: 500, reason: "storing the body failed: \(storageError)", socket)
                    case .memoryLimitExceeded(let limit):
                        reject(status: 413, reason: "body exceeds \(limit) bytes kept in memory", socket)
                    }
                    return .close
                }
            case .end(let trailers):
                guard finish(trailers: trailers, socket) == .keepReading else { return .close }
                messageStart = offset < input.count ? .now : nil
            }
        }
    }

    /// A head arrived: number the request, open its file, and send `100 Continue` if asked.
    private mutating func begin(_ head: HTTPRequestHead, _ socket: borrowing Socket) -> Next {
        let sequence = context.nextSequence()
        var file: BodyFile?
        if let storage = context.storage, head.framing != .none {
            do {
                file = try storage.createFile(sequence: sequence, method: head.method)
            } catch {
                request = InFlight(sequence: sequence, head: head, body: makeBody(file: nil), start: messageStart ?? .now)
                reject(status: 500, reason: "storing the body failed: \(error)", socket)
                return .close
            }
        }
        request = InFlight(sequence: sequence, head: head, body: makeBody(file: file), start: messageStart ?? .now)
        if head.expectsContinue && head.hasBody && head.minorVersion >= 1 {
            do {
                try socket.send(HTTPResponse.continueInterim)
            } catch {
                abort(failure: "sending 100 Continue failed: \(error)")
                return .close
            }
        }
        return .keepReading
    }

    private func makeBody(file: BodyFile?) -> RequestBody {
        let configuration = context.configuration
        return RequestBody(
            hash: configuration.hashBodies, file: file,
            keepInMemory: configuration.keepBodiesInMemory, memoryLimit: configuration.maxBodyBytesInMemory)
    }

    /// The request ended: store, report, answer.
    private mutating func finish(trailers: [SinkHeaderField], _ socket: borrowing Socket) -> Next {
        guard let finished = request.take() else {
            preconditionFailure("parser ended a request that never began")
        }
        let summary = finished.body.finish(complete: true)
        if let storageError = summary.storageError {
            report(finished, summary, trailers: trailers, status: 500, failure: "storing the body failed: \(storageError)")
            sendError(status: 500, reason: "storing the body failed", socket)
            lingeringClose(socket)
            return .close
        }
        let event = report(finished, summary, trailers: trailers, status: 200, failure: nil)
        let keepAlive = finished.head.keepAlive && !context.isStopping
        let response = HTTPResponse.json(status: 200, body: HTTPResponse.summary(of: event), close: !keepAlive)
        do {
            try socket.send(response)
        } catch {
            return .close
        }
        return keepAlive ? .keepReading : .close
    }

    /// The request cannot go on: report it with `status`, answer, and close gracefully.
    private mutating func reject(status: Int, reason: String, _ socket: borrowing Socket) {
        reportUnfinished(status: status, failure: reason)
        sendError(status: status, reason: reason, socket)
        lingeringClose(socket)
    }

    /// The connection went silent for the idle timeout.
    private mutating func timeOut(_ socket: borrowing Socket) {
        guard request != nil || !parser.isAtMessageStart else { return }
        reject(status: 408, reason: "no data for \(context.configuration.idleTimeout)", socket)
    }

    /// The connection ended under a request (client gone, or the server stopping).
    private mutating func abort(failure: String) {
        guard request != nil || !parser.isAtMessageStart else { return }
        reportUnfinished(status: 0, failure: failure)
    }

    /// Reports the request in flight (or the partial head) as incomplete.
    private mutating func reportUnfinished(status: Int, failure: String) {
        if let unfinished = request.take() {
            let summary = unfinished.body.finish(complete: false)
            report(unfinished, summary, trailers: [], status: status, failure: failure)
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
        _ request: InFlight, _ summary: RequestBody.Summary, trailers: [SinkHeaderField], status: Int, failure: String?
    ) -> SinkRequestEvent {
        let event = SinkRequestEvent(
            sequence: request.sequence, method: request.head.method, path: request.head.target,
            version: request.head.version, headers: request.head.headers, trailers: trailers,
            bodyByteCount: summary.byteCount, sha256: summary.sha256, body: summary.body,
            storedFile: summary.storedFile, duration: .now - request.start, status: status,
            isComplete: failure == nil, peer: peer, failure: failure)
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
}
