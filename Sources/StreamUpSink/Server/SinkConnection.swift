import Foundation
import StreamUpHTTP

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
/// Files, by concern: this one (the read loop, parsing, body bytes), `+Begin` (a head arrived),
/// `+Finish` (a body ended), `+Endings` (rejections, timeouts, shedding, reports), `+Faults`
/// (injected faults), `+Streams` (stream headers and merging), `+Resumable` (the glue to
/// resumable uploads: attach, append, finish, release).
///
/// Thread safety: confined to its connection thread; never shared.
struct SinkConnection {
    /// Whether to keep reading after handling some input.
    enum Next {
        case keepReading
        case close
    }

    /// A request whose head has arrived.
    struct InFlight {
        var sequence: Int
        var head: HTTPRequestHead
        var body: RequestBody
        var start: ContinuousClock.Instant
        /// Answer this after discarding the body (an injected failure, a refused or answered
        /// resumable-upload request).
        var prepared: PreparedResponse?
        /// The de-duplicated stream this body belongs to.
        var stream: (id: String, offset: Int)?
        /// Lose the `200` of this request (``SinkFaults/loseAnswersOfStreamRequests``).
        var losesAnswer = false
        /// The most body bytes this request may carry (``SinkConfiguration/maxBodyBytes``, less
        /// what its resumable upload holds); `nil` for no limit.
        var bodyLimit: Int?
    }

    let context: SinkServerContext
    let peer: String
    /// This connection's place in the registry (waiting for a head, inside a request, shed).
    let slot: ConnectionSlot
    var parser: HTTPRequestParser
    var request: InFlight?
    /// The resumable upload the request in flight creates or appends to.
    var attached: ResumableRequestHandler.Attached?
    /// When the first byte of the message being parsed arrived.
    var messageStart: ContinuousClock.Instant?
    /// The idle, request-head and body-rate clocks.
    var deadlines: ConnectionDeadlines

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

    mutating func run(_ socket: borrowing Socket) {
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
                    let paused = ContinuousClock.now
                    throttle(until: connectionStart + .seconds(Double(totalRead) / Double(rate)))
                    deadlines.sinkPaused(for: .now - paused)
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
    mutating func process(_ input: UnsafeRawBufferPointer, _ socket: borrowing Socket) -> Next {
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
                    threshold >= received, threshold - received < split
                {
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
    mutating func appendBody(_ bytes: UnsafeRawBufferPointer, _ socket: borrowing Socket) -> Next {
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
            let limitText = context.configuration.maxBodyBytes.map { counted($0, "byte") } ?? "? bytes"
            reject(status: 413, reason: "\(what) exceeds the limit of \(limitText)", socket)
            return .close
        }
        context.faultState.countBody(bytes.count)
        var bytes = bytes
        var forgetting = false
        if let attached, appendToUpload(attached, &bytes, forgetting: &forgetting, socket) == .close {
            return .close
        }
        do {
            try request?.body.append(bytes)
        } catch {
            switch error {
            case .storage(let storageError):
                reject(status: 500, reason: "storing the body failed: \(storageError.details)", socket)
            case .memoryLimitExceeded(let limit):
                reject(status: 413, reason: "body exceeds \(counted(limit, "byte")) kept in memory", socket)
            }
            return .close
        }
        if forgetting {
            return forgetUploads(socket)
        }
        return .keepReading
    }
}
