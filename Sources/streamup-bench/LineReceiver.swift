import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What a ``LineReceiver`` saw in one request.
///
/// Thread safety: an immutable value; safe to send anywhere.
struct ReceivedLines: Sendable {
    /// Per timed line: arrival (the `recv` that completed the line) minus the stamp in the line, in ns.
    var latencies: [UInt64] = []
    /// ``MonotonicClock`` time of the first body byte; 0 if none arrived.
    var firstBodyByteNanos: UInt64 = 0
    /// True when the body's last chunk arrived (the client ended the request properly).
    var complete = false
    var error: String?
}

/// The latency probe: a minimal HTTP/1.1 server on 127.0.0.1 for exactly one request, run on
/// its own thread. It answers `100 Continue` when asked, splits the body into lines *as the
/// bytes arrive*, and for every line that starts with a decimal
/// ``MonotonicClock`` stamp (see ``LineSender``) records arrival time minus stamp. Lines that do
/// not start with a digit (the warm-up line) are not timed. After the body's end it answers
/// `200` with `Connection: close`.
///
/// The sink has no per-chunk hook, so this receiver stands in for it when timing lines; it does
/// no more work per byte than the sink (one `recv` into a fixed 64 KiB buffer, a scan for `\n`).
///
/// Thread safety: `firstBodyByteNanos` is an atomic; the result is handed over in ``join()``.
final class LineReceiver: Sendable {
    let port: UInt16
    private let firstByte = Atomic<UInt64>(0)
    private let result = LockedValue(ReceivedLines())
    private let done = DispatchSemaphore(value: 0)

    /// Listens on a free loopback port and waits (at most `acceptTimeout` seconds) for one client.
    init(acceptTimeout: Double) throws(BenchError) {
        let (listener, port) = try Descriptors.listenOnLoopback()
        self.port = port
        let thread = Thread { [self] in
            var lines = ReceivedLines()
            lines.latencies.reserveCapacity(1 << 16)
            do {
                if let connection = try Descriptors.accept(listener, timeoutSeconds: acceptTimeout) {
                    close(listener)
                    defer { close(connection) }
                    try Self.serve(connection, into: &lines) { self.firstByte.store($0, ordering: .releasing) }
                } else {
                    close(listener)
                    lines.error = "no client connected within \(Int(acceptTimeout)) s"
                }
            } catch {
                lines.error = "\(error)"
            }
            self.result.set(lines)
            self.done.signal()
        }
        thread.name = "bench.receiver"
        thread.start()
    }

    /// ``MonotonicClock`` time of the first body byte, or 0 while none has arrived.
    var firstBodyByteNanos: UInt64 { firstByte.load(ordering: .acquiring) }

    /// Waits until the request has ended (or the connection closed) and returns what arrived.
    func join() -> ReceivedLines {
        done.wait()
        done.signal()
        return result.get()
    }

    private static func serve(_ fd: CInt, into lines: inout ReceivedLines, onFirstByte: (UInt64) -> Void) throws(BenchError) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 64)
        defer { buffer.deallocate() }
        var decoder = RequestDecoder()
        var splitter = StampedLineSplitter()
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }  // closed or reset: the client ended without finishing
            let now = MonotonicClock.now()
            var headError: BenchError?
            var ended = false
            try decoder.feed(UnsafeRawBufferPointer(rebasing: buffer[0..<count])) { expectsContinue in
                if expectsContinue && !Descriptors.sendAll(fd, "HTTP/1.1 100 Continue\r\n\r\n") {
                    headError = BenchError("could not send 100 Continue")
                }
            } onBody: { body in
                if lines.firstBodyByteNanos == 0 && !body.isEmpty {
                    lines.firstBodyByteNanos = now
                    onFirstByte(now)
                }
                splitter.feed(body, arrivedAt: now, into: &lines.latencies)
            } onEnd: {
                ended = true
            }
            if let headError { throw headError }
            if ended {
                lines.complete = true
                _ = Descriptors.sendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            }
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
