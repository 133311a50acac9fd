import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The receiver of the log-shipping runs: a ``ProbeServer`` (keep-alive, chunked or
/// `Content-Length` bodies, `100 Continue` when asked) that counts the ``LogWriter`` lines in
/// every body *as the bytes arrive* into the current run's ``LineTally``, and answers each
/// request `200` with an empty body.
///
/// The project's sink reports a request only when it ends, so it cannot tell when the last line
/// of a never-ending request has arrived; this receiver can, for every shipper alike. It does
/// no more work per byte than the sink (one `recv` into a fixed 64 KiB buffer, a scan).
///
/// Thread safety: the current tally is behind a `LockedValue`; connection threads report into
/// it; every member is callable from any thread.
final class LineCountingSink: Sendable {
    private let current = LockedValue<LineTally?>(nil)
    private let server: ProbeServer

    /// Listens on `port` (0: a free one); counts into nothing until ``begin(expected:)``.
    init(port: UInt16 = 0) throws(BenchError) {
        let current = self.current
        server = try ProbeServer(name: "count", port: port) { fd in Self.serve(fd, current: current) }
    }

    /// A sink on `port` (0: a free one) that counts into `tally` from the start (also a
    /// receiver back on its port after an outage).
    init(port: UInt16, countingInto tally: LineTally) throws(BenchError) {
        let current = self.current
        current.set(tally)
        server = try ProbeServer(name: "count", port: port) { fd in Self.serve(fd, current: current) }
    }

    var url: String { server.url }
    var port: UInt16 { server.port }

    /// Counts what arrives from now on into a new tally of `expected` lines.
    func begin(expected: Int) -> LineTally {
        let tally = LineTally(expected: expected)
        current.set(tally)
        return tally
    }

    /// Stops counting into the current tally.
    func end() {
        current.set(nil)
    }

    func stop() {
        server.stop(graceSeconds: 0)
    }

    private static func serve(_ fd: CInt, current: LockedValue<LineTally?>) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 64)
        defer { buffer.deallocate() }
        var parser = RequestReader()
        var scanner = SequenceScanner()
        var numbers: [Int] = []
        numbers.reserveCapacity(1 << 12)
        var bodyBytes = 0
        var arrived: UInt64 = 0
        func flush() {
            if !numbers.isEmpty || bodyBytes > 0 { current.get()?.mark(numbers, bytes: bodyBytes, at: arrived) }
            numbers.removeAll(keepingCapacity: true)
            bodyBytes = 0
        }
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            arrived = MonotonicClock.now()
            do {
                try parser.feed(UnsafeRawBufferPointer(rebasing: buffer[0..<count])) { expectsContinue in
                    if expectsContinue { _ = Descriptors.sendAll(fd, "HTTP/1.1 100 Continue\r\n\r\n") }
                } onBody: { body in
                    scanner.feed(body, into: &numbers)
                    bodyBytes += body.count
                } onEnd: {
                    scanner.finish(into: &numbers)
                    flush()
                    current.get()?.requestEnded()
                    _ = Descriptors.sendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                }
            } catch {
                _ = Descriptors.sendAll(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                break
            }
            flush()
        }
        flush()
        if !parser.isAtMessageStart { current.get()?.requestAborted() }
    }
}
