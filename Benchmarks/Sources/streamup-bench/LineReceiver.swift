import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What a ``LineReceiver`` saw over a run.
///
/// Thread safety: an immutable value; safe to send anywhere.
struct ReceivedLines: Sendable {
    /// Per timed line: arrival (the `recv` that completed the line) minus the stamp in the line, in ns.
    var latencies: [UInt64] = []
    /// ``MonotonicClock`` time of the first body byte; 0 if none arrived.
    var firstBodyByteNanos: UInt64 = 0
    /// Requests that ended properly (answered 200).
    var requests = 0
    /// Connections that closed inside a request.
    var abortedRequests = 0
    var error: String?

    /// True when at least one request arrived and every one ended properly.
    var complete: Bool { requests > 0 && abortedRequests == 0 && error == nil }
}

/// The latency probe: a ``ProbeServer`` that splits every request body into lines *as the bytes
/// arrive*, and for every line that starts with a decimal ``MonotonicClock`` stamp (see
/// ``LineSender``) records arrival time minus stamp. Lines that do not start with a digit (the
/// warm-up line) are not timed. It answers `100 Continue` when asked and `200` after each
/// request, keeping the connection, so a client that sends a series of requests (streamup's
/// segments) is timed across all of them.
///
/// The sink has no per-chunk hook, so this receiver stands in for it when timing lines; it does
/// no more work per byte than the sink (one `recv` into a fixed 64 KiB buffer, a scan for `\n`).
///
/// Thread safety: the first byte's time and the lines (merged per connection when it ends) are
/// behind `LockedValue`s; the result is handed over in ``finish(graceSeconds:)``.
final class LineReceiver: Sendable {
    private let firstByte = LockedValue<UInt64>(0)
    private let merged = LockedValue(ReceivedLines())
    private let server: ProbeServer

    init() throws(BenchError) {
        let firstByte = self.firstByte
        let merged = self.merged
        server = try ProbeServer(name: "receiver") { fd in
            var lines = ReceivedLines()
            lines.latencies.reserveCapacity(1 << 16)
            do {
                try Self.serve(fd, into: &lines) { now in
                    firstByte.update { if $0 == 0 { $0 = now } }
                }
            } catch {
                lines.error = "\(error)"
            }
            merged.update { total in
                total.latencies += lines.latencies
                total.requests += lines.requests
                total.abortedRequests += lines.abortedRequests
                if total.error == nil { total.error = lines.error }
            }
        }
    }

    var port: UInt16 { server.port }

    /// ``MonotonicClock`` time of the first body byte, or 0 while none has arrived.
    var firstBodyByteNanos: UInt64 { firstByte.get() }

    /// Stops accepting, waits up to `graceSeconds` for the client's connections to close, and
    /// returns what arrived.
    func finish(graceSeconds: Double) -> ReceivedLines {
        server.stop(graceSeconds: graceSeconds)
        var lines = merged.get()
        lines.firstBodyByteNanos = firstBodyByteNanos
        return lines
    }

    private static func serve(_ fd: CInt, into lines: inout ReceivedLines, onFirstByte: (UInt64) -> Void) throws(BenchError) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 64)
        defer { buffer.deallocate() }
        var parser = RequestReader()
        var splitter = StampedLineSplitter()
        var sawBody = false
        defer { if !parser.isAtMessageStart { lines.abortedRequests += 1 } }
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }  // closed or reset
            let now = MonotonicClock.now()
            var sendError: BenchError?
            do {
                try parser.feed(UnsafeRawBufferPointer(rebasing: buffer[0..<count])) { expectsContinue in
                    if expectsContinue && !Descriptors.sendAll(fd, "HTTP/1.1 100 Continue\r\n\r\n") {
                        sendError = BenchError("could not send 100 Continue")
                    }
                } onBody: { body in
                    if !sawBody && !body.isEmpty {
                        sawBody = true
                        onFirstByte(now)
                    }
                    splitter.feed(body, arrivedAt: now, into: &lines.latencies)
                } onEnd: {
                    // The splitter goes on: the next request on this connection continues the stream.
                    lines.requests += 1
                    if !Descriptors.sendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n") {
                        sendError = BenchError("could not answer a request")
                    }
                }
            } catch {
                throw BenchError("bad request from the client: \(error)")
            }
            if let sendError { throw sendError }
        }
    }
}

/// Splits a byte stream into lines and reads the leading decimal stamp of each line.
///
/// Thread safety: a value type confined to the receiver's thread.
struct StampedLineSplitter {
    private var atLineStart = true
    private var timed = false
    private var inStamp = false
    private var stamp: UInt64 = 0

    mutating func feed(_ bytes: UnsafeRawBufferPointer, arrivedAt now: UInt64, into latencies: inout [UInt64]) {
        for byte in bytes {
            if byte == UInt8(ascii: "\n") {
                if timed { latencies.append(now >= stamp ? now - stamp : 0) }
                atLineStart = true
                timed = false
                inStamp = false
                stamp = 0
                continue
            }
            let isDigit = byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
            if atLineStart {
                atLineStart = false
                timed = isDigit
                inStamp = isDigit
            }
            if inStamp {
                if isDigit {
                    stamp = stamp &* 10 &+ UInt64(byte - UInt8(ascii: "0"))
                } else {
                    inStamp = false
                }
            }
        }
    }
}
