import Foundation
import StreamUpTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A raw TCP client that sends a request a few bytes at a time, as a slowloris attacker or a
/// dripping uploader does, and watches for the server's answer between sends.
///
/// ``drip(_:every:)`` paces itself with `poll(2)` on the socket: each pause *is* the wait for the
/// answer, so the client stops the moment the server answers or closes, never sleeping past it.
///
/// Thread safety: not Sendable; used by one thread at a time.
final class SlowClient {
    /// What ended a drip.
    enum Outcome: Equatable {
        /// The server answered (or closed) after this many bytes were sent.
        case answered(afterBytes: Int)
        /// Every byte was sent and the server said nothing.
        case allSent
        /// A send failed (the server reset the connection) after this many bytes.
        case sendFailed(afterBytes: Int)
    }

    private(set) var descriptor: CInt

    init(port: UInt16) throws {
        do {
            descriptor = try connectToLoopback(port: port)
        } catch {
            throw TestClientError(description: "\(error)")
        }
    }

    deinit {
        close()
    }

    func close() {
        if descriptor >= 0 {
            _ = closeSocket(descriptor)
            descriptor = -1
        }
    }

    /// Sends `bytes` without blocking; false when the connection is gone (or its buffer full).
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        let sent = bytes.withUnsafeBytes { sendSocket(descriptor, $0.baseAddress, $0.count, dripFlags) }
        return sent == bytes.count
    }

    /// Sends `bytes` `piece` bytes at a time, waiting up to `interval` for an answer after each
    /// piece; stops at the first sign of one (readable data, end of file or reset).
    func drip(_ bytes: [UInt8], piece: Int = 1, every interval: Duration) -> Outcome {
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + piece)
            guard send(Array(bytes[offset..<end])) else { return .sendFailed(afterBytes: offset) }
            offset = end
            if hasAnswer(within: interval) { return .answered(afterBytes: offset) }
        }
        return .allSent
    }

    /// Whether the server has sent something (or closed) within `timeout`.
    func hasAnswer(within timeout: Duration) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let milliseconds = CInt(timeout.components.seconds * 1_000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        return poll(&entry, 1, milliseconds) > 0
    }

    /// Everything the server sends until it closes (or 10 s pass), as text.
    func readToEnd() -> String {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

#if canImport(Glibc)
private let dripFlags = CInt(MSG_NOSIGNAL | MSG_DONTWAIT)
#else
private let dripFlags = CInt(MSG_DONTWAIT)
#endif

private func closeSocket(_ fd: CInt) -> CInt {
    #if canImport(Glibc)
    Glibc.close(fd)
    #else
    Darwin.close(fd)
    #endif
}

private func sendSocket(_ fd: CInt, _ buffer: UnsafeRawPointer?, _ count: Int, _ flags: CInt) -> Int {
    send(fd, buffer, count, flags)
}
