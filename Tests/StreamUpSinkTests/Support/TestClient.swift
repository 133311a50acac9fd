import Foundation
import StreamUpTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failure in the test client (connect, send, a response that doesn't parse, a timeout).
struct TestClientError: Error, CustomStringConvertible {
    var description: String
}

/// One parsed response read by ``TestClient``.
struct TestResponse {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]

    var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object.
    func json() throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw TestClientError(description: "body is not a JSON object: \(bodyText)")
        }
        return object
    }
}

/// A raw blocking TCP client for live tests: connect to 127.0.0.1, send bytes, read responses.
/// Every read is bounded by `SO_RCVTIMEO` (10 s by default) so a broken server fails the test
/// instead of hanging it. The descriptor is closed in ``close()`` or `deinit`.
///
/// Thread safety: not Sendable; used by one test at a time.
#if canImport(Glibc)
private let noSignal = CInt(MSG_NOSIGNAL)
#else
private let noSignal: CInt = 0
#endif

final class TestClient {
    private var descriptor: CInt
    /// Bytes read past the end of the last response (pipelined or interim responses).
    private var pending: [UInt8] = []

    init(port: UInt16, receiveTimeout: Duration = .seconds(10)) throws {
        do {
            descriptor = try connectToLoopback(port: port)
        } catch {
            throw TestClientError(description: "\(error)")
        }
        let scaled = TestTime.scaled(receiveTimeout).components  // slower under a sanitizer
        var timeout = timeval(tv_sec: Int(scaled.seconds), tv_usec: Int(scaled.attoseconds / 1_000_000_000_000))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit {
        close()
    }

    func close() {
        if descriptor >= 0 {
            closeDescriptor(descriptor)
            descriptor = -1
        }
    }

    /// Half-closes the sending side (`shutdown(SHUT_WR)`).
    func finishSending() {
        shutdown(descriptor, CInt(SHUT_WR))
    }

    func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                sendBytes(descriptor, $0.baseAddress, $0.count, noSignal)
            }
            guard sent > 0 else { throw TestClientError(description: "send: errno \(errno)") }
            offset += sent
        }
    }

    /// Sends `body` with chunked framing, in chunks of the given sizes (cycled), then the last chunk.
    func sendChunked(_ body: [UInt8], chunkSizes: [Int]) throws {
        var offset = 0
        var index = 0
        while offset < body.count {
            let size = min(chunkSizes[index % chunkSizes.count], body.count - offset)
            index += 1
            try send(Array(String(size, radix: 16).utf8) + [13, 10] + body[offset..<(offset + size)] + [13, 10])
            offset += size
        }
        try send("0\r\n\r\n")
    }

    /// Reads one response (head plus `Content-Length` body; interim 1xx responses have none).
    func readResponse() throws -> TestResponse {
        let separator: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        while true {
            if let end = find(separator, in: pending) {
                headEnd = end
                break
            }
            guard try readMore() else {
                throw TestClientError(description: "connection closed before a response head (\(pending.count) bytes)")
            }
        }
        let headBytes = Array(pending[0..<headEnd!])
        pending.removeFirst(headEnd! + 4)
        let lines = String(decoding: headBytes, as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw TestClientError(description: "bad status line: \(lines[0])")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while pending.count < length {
            guard try readMore() else { throw TestClientError(description: "connection closed inside a response body") }
        }
        let body = Array(pending[0..<length])
        pending.removeFirst(length)
        return TestResponse(status: status, headers: headers, body: body)
    }

    /// Reads until the server closes; true when it did (end of file or reset), false on timeout.
    func readUntilClosed() throws -> Bool {
        while true {
            var buffer = [UInt8](repeating: 0, count: 4_096)
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 { continue }
            if count == 0 { return true }
            if errno == ECONNRESET { return true }
            if errno == EAGAIN || errno == EWOULDBLOCK { return false }
            throw TestClientError(description: "recv: errno \(errno)")
        }
    }

    /// How the server ended the connection, as seen by ``readUntilEnd()``.
    enum Ending: Equatable {
        case endOfFile
        case reset
        case timedOut
    }

    /// Reads until the server ends the connection; returns how, and how many bytes came first.
    func readUntilEnd() throws -> (ending: Ending, bytesBefore: Int) {
        var total = pending.count
        while true {
            var buffer = [UInt8](repeating: 0, count: 4_096)
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                total += count
                continue
            }
            if count == 0 { return (.endOfFile, total) }
            if errno == ECONNRESET { return (.reset, total) }
            if errno == EAGAIN || errno == EWOULDBLOCK { return (.timedOut, total) }
            throw TestClientError(description: "recv: errno \(errno)")
        }
    }

    private func readMore() throws -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        if count > 0 {
            pending.append(contentsOf: buffer[0..<count])
            return true
        }
        if count == 0 { return false }
        throw TestClientError(description: "recv: errno \(errno)")
    }

    private func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }
}

private func closeDescriptor(_ fd: CInt) {
    #if canImport(Glibc)
    _ = Glibc.close(fd)
    #else
    _ = Darwin.close(fd)
    #endif
}

private func sendBytes(_ fd: CInt, _ buffer: UnsafeRawPointer?, _ count: Int, _ flags: CInt) -> Int {
    send(fd, buffer, count, flags)
}
