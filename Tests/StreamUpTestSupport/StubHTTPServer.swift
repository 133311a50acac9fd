import Foundation
import StreamUpHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A scripted HTTP server on 127.0.0.1 for failure tests: it answers every request the same
/// chosen way (a status before or after the body, or hanging up mid-body without an answer),
/// so a test can see what the client does with answers the real sink never gives.
///
/// Thread safety: `state` is guarded by `lock`; one accept thread serves connections in turn.
public final class StubHTTPServer: @unchecked Sendable {
    /// How each request is treated.
    public enum Behaviour: Sendable {
        /// Read the head, answer at once with `status` and close, without reading the body.
        case answerEarly(status: Int, headers: [String] = [], body: String = "")
        /// Read the whole chunked body, then answer `status`.
        case answerAfterBody(status: Int, headers: [String] = [], body: String = "")
        /// Read the head and `bytes` bytes of what follows, then close with no answer.
        case hangUpAfter(bytes: Int)
        /// Read the head, then close the connection cleanly (FIN, nothing unread), as a proxy
        /// does to a request body that stays idle past its timeout.
        case closeAfterHead
        /// Read the whole chunked body, then close the connection cleanly without an answer.
        case closeWithoutAnswer
        /// Answer the first `answering` requests 200 after their bodies, then read each later one
        /// whole and close without an answer (a receiver that runs out of memory).
        case answerThenCloseWithoutAnswer(answering: Int)
        /// Read the whole body, answer `status` with a body that never ends (no length, pieces
        /// of `pieceBytes` every `interval`, or as fast as the client takes them) until the client
        /// hangs up or `stop()`.
        case answerWithEndlessBody(status: Int, pieceBytes: Int = 65536, interval: Duration = .zero)
        /// Read the head, then read nothing more until `resume()`; then read the whole chunked
        /// body (kept in `receivedBodies`) and answer 200.
        case stallUntilResumed
    }

    public let port: UInt16
    private let listener: Int32
    private let behaviour: Behaviour
    private let lock = NSCondition()
    private var stopped = false
    private var heads: [String] = []
    private var bodies: [[UInt8]] = []
    private var resumed = false
    private var stalled = false
    private var closed = 0
    private var thread: Thread?
    private var finishedThread = false

    public var url: String { "http://127.0.0.1:\(port)/ingest" }

    /// Request heads received so far.
    public var receivedHeads: [String] { lock.withLock { heads } }

    /// Decoded bodies of the requests read to their end (`.stallUntilResumed`).
    public var receivedBodies: [[UInt8]] { lock.withLock { bodies } }

    /// Connections closed by the server so far.
    public var closedConnections: Int { lock.withLock { closed } }

    /// Whether a request is being held unread (`.stallUntilResumed`).
    public var isStalling: Bool { lock.withLock { stalled } }

    /// Lets a stalled request be read (`.stallUntilResumed`).
    public func resume() {
        lock.withLock {
            resumed = true
            lock.broadcast()
        }
    }

    public init(_ behaviour: Behaviour) throws {
        self.behaviour = behaviour
        let listener = socket(AF_INET, POSIXCalls.streamSocket, 0)
        self.listener = listener
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        if case .stallUntilResumed = behaviour {
            // A small receive window (inherited by accepted sockets), so a stall reaches the
            // client within kilobytes instead of the megabytes loopback buffers hold.
            var size: Int32 = 4096
            setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in acceptLoop() }
        self.thread = thread
        thread.start()
    }

    /// Stops accepting, closes the listener and waits for the accept thread to end.
    public func stop() {
        lock.withLock {
            stopped = true
            resumed = true
            lock.broadcast()
        }
        shutdown(listener, Int32(SHUT_RDWR))
        lock.lock()
        while !finishedThread { lock.wait() }
        lock.unlock()
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                break
            }
            if lock.withLock({ stopped }) {
                close(connection)
                break
            }
            serve(connection)
            close(connection)
            lock.withLock {
                closed += 1
                lock.broadcast()
            }
        }
        lock.withLock {
            finishedThread = true
            lock.broadcast()
        }
    }

    private func serve(_ fd: Int32) {
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        // The request is decoded as it arrives; only `.stallUntilResumed` keeps the body.
        var parser = HTTPRequestParser(limits: Self.parserLimits)
        let keepsBody = if case .stallUntilResumed = behaviour { true } else { false }
        var body: [UInt8] = []
        var requestEnded = false
        func readMore() -> Bool {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { return false }
            received.append(contentsOf: buffer[0..<count])
            guard !requestEnded else { return true }
            do {
                try buffer.withUnsafeBytes { raw in
                    try parser.feed(UnsafeRawBufferPointer(rebasing: raw[0..<count])) { _ in
                    } onBody: { piece in
                        if keepsBody && !requestEnded { body.append(contentsOf: piece) }
                    } onEnd: { _ in
                        requestEnded = true
                    }
                }
            } catch {
                // Not HTTP/1.1 our clients send: end the connection.
                return false
            }
            return true
        }
        func find(_ pattern: String, from start: Int = 0) -> Int? {
            let needle = Array(pattern.utf8)
            guard received.count >= needle.count + start else { return nil }
            for index in start...(received.count - needle.count) where received[index..<index + needle.count].elementsEqual(needle) {
                return index
            }
            return nil
        }
        var headEnd: Int?
        while headEnd == nil {
            headEnd = find("\r\n\r\n")
            if headEnd == nil && !readMore() { return }
        }
        let bodyStart = headEnd! + 4
        lock.withLock { heads.append(String(decoding: received[0..<headEnd!], as: UTF8.self)) }
        switch behaviour {
        case .answerEarly(let status, let headers, let body):
            respond(fd, status: status, headers: headers, body: body)
        case .answerAfterBody(let status, let headers, let body):
            while !requestEnded {
                if !readMore() { return }
            }
            respond(fd, status: status, headers: headers, body: body)
        case .stallUntilResumed:
            lock.withLock {
                stalled = true
                while !resumed { lock.wait() }
                stalled = false
            }
            while !requestEnded {
                if !readMore() { return }
            }
            lock.withLock { bodies.append(body) }
            respond(fd, status: 200, headers: [], body: "{\"bytes\":\(body.count)}")
        case .answerWithEndlessBody(let status, let pieceBytes, let interval):
            while !requestEnded {
                if !readMore() { return }
            }
            let head = Array("HTTP/1.1 \(status) Status \(status)\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n".utf8)
            let piece = [UInt8](repeating: UInt8(ascii: "x"), count: pieceBytes)
            var sent = head.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, POSIXCalls.noSignal) }
            while sent > 0, !lock.withLock({ stopped }) {
                if interval > .zero { usleep(useconds_t(interval.components.attoseconds / 1_000_000_000_000 + interval.components.seconds * 1_000_000)) }
                sent = piece.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, POSIXCalls.noSignal) }
            }
        case .closeAfterHead:
            // Take what already arrived, so the close is a FIN rather than a reset.
            while recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 {}
        case .closeWithoutAnswer:
            while !requestEnded {
                if !readMore() { return }
            }
        case .answerThenCloseWithoutAnswer(let answering):
            while !requestEnded {
                if !readMore() { return }
            }
            let answers = lock.withLock { heads.count <= answering }
            if answers { respond(fd, status: 200, headers: [], body: "ok") }
        case .hangUpAfter(let bytes):
            while received.count - bodyStart < bytes {
                if !readMore() { return }
            }
            // Reset rather than a clean close, like a crashed server or a dropped link.
            var lingerOption = linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &lingerOption, socklen_t(MemoryLayout<linger>.size))
        }
    }

    /// Generous bounds: the stub reads what streamup and URLSession send, not hostile input.
    private static let parserLimits = HTTPRequestParser.Limits(maxHeaderBytes: 64 * 1024, maxChunkLineBytes: 1024)

    private func respond(_ fd: Int32, status: Int, headers: [String], body: String) {
        var text = "HTTP/1.1 \(status) Status \(status)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n"
        for header in headers { text += header + "\r\n" }
        text += "\r\n" + body
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, POSIXCalls.noSignal) }
        shutdown(fd, Int32(SHUT_WR))
        // Drain what the client still sends so the close is graceful, up to a bound.
        var drain = [UInt8](repeating: 0, count: 65536)
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var total = 0
        while total < 64 << 20 {
            let count = recv(fd, &drain, drain.count, 0)
            if count <= 0 { break }
            total += count
        }
    }
}

/// A TCP port on 127.0.0.1 that nothing listens on (bound, then released).
public func unusedLocalPort() -> UInt16 {
    let fd = socket(AF_INET, POSIXCalls.streamSocket, 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return UInt16(bigEndian: address.sin_port)
}
