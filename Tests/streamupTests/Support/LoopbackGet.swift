import Foundation
import StreamUpTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A plain `GET` to 127.0.0.1, for the cheap checks a test repeats while it waits (how many
/// records a validator holds, a ClickHouse count), and the few other requests tests make of
/// their own servers (a validator's read-back and namespaces): an HTTP/1.0 request on a socket
/// of its own, read to the server's close. No URLSession (its shared queue may be busy with
/// another test's live body, DesignNotes, platform fact 3) and no child process per check.
///
/// Blocking: call it from a thread of its own (``onOwnThread(_:)``), never from a task.
///
/// Thread safety: stateless.
enum LoopbackGet {
    /// The status and body of `GET target` at 127.0.0.1:`port`, or nil when the connection
    /// fails or the answer is not HTTP.
    static func fetch(port: UInt16, _ target: String) -> (status: Int, body: [UInt8])? {
        request("GET", port: port, target)
    }

    /// The status and body of `METHOD target` with `body` (sent with its `Content-Length` when
    /// not empty) at 127.0.0.1:`port`, or nil when the connection fails or the answer is not HTTP.
    static func request(_ method: String, port: UInt16, _ target: String, body: [UInt8] = []) -> (status: Int, body: [UInt8])? {
        guard let fd = try? connectToLoopback(port: port) else { return nil }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let length = body.isEmpty ? "" : "Content-Length: \(body.count)\r\n"
        let request = Array("\(method) \(target) HTTP/1.0\r\nHost: 127.0.0.1\r\n\(length)\r\n".utf8) + body
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, POSIXCalls.noSignal) }
            if n <= 0 { return nil }
            sent += n
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 { return nil }
            if n == 0 { break }
            answer += buffer[..<n]
        }
        let separator = Array("\r\n\r\n".utf8)
        guard let end = answer.indices.first(where: { answer[$0...].starts(with: separator) }) else { return nil }
        let statusLine = String(decoding: answer[..<end], as: UTF8.self).split(separator: "\r\n").first ?? ""
        let words = statusLine.split(separator: " ")
        guard words.count >= 2, words[0].hasPrefix("HTTP/"), let status = Int(words[1]) else { return nil }
        return (status, Array(answer[(end + separator.count)...]))
    }
}

/// Runs `body` on a thread of its own (it may block) and returns its result.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}
