import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The receiver of the log-shipping runs: a minimal HTTP/1.1 server on 127.0.0.1 (a thread per
/// connection, keep-alive, chunked or `Content-Length` bodies, `100 Continue` when asked) that
/// counts the ``LogWriter`` lines in every body *as the bytes arrive* into the current run's
/// ``LineTally``, and answers each request `200` with an empty body.
///
/// The project's sink reports a request only when it ends, so it cannot tell when the last line
/// of a never-ending request has arrived; this receiver can, for every shipper alike. It does
/// no more work per byte than the sink (one `recv` into a fixed 64 KiB buffer, a scan).
///
/// Thread safety: the current tally and the open connections are behind `LockedValue`s; the
/// accept and connection threads run on their own; every member is callable from any thread.
final class LineCountingSink: Sendable {
    let port: UInt16
    private let wake: (read: CInt, write: CInt)
    private let current = LockedValue<LineTally?>(nil)
    private let connections = LockedValue<Set<CInt>>([])
    private let threads = DispatchGroup()

    /// Listens on a free loopback port and starts accepting.
    init() throws(BenchError) {
        let (listener, port) = try Descriptors.listenOnLoopback()
        self.port = port
        do {
            wake = try Descriptors.pipe()
        } catch {
            close(listener)
            throw error
        }
        threads.enter()
        let thread = Thread { [self] in
            acceptLoop(listener)
            close(listener)
            threads.leave()
        }
        thread.name = "bench.count-accept"
        thread.start()
    }

    var url: String { "http://127.0.0.1:\(port)/" }

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

    /// Stops accepting, ends every connection, and waits for all threads.
    func stop() {
        _ = [UInt8(1)].withUnsafeBytes { Descriptors.writeAll(wake.write, $0) }
        for fd in connections.get() { shutdown(fd, CInt(SHUT_RDWR)) }
        threads.wait()
        close(wake.read)
        close(wake.write)
    }

    private func acceptLoop(_ listener: CInt) {
        while true {
            var descriptors = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            guard poll(&descriptors, 2, -1) >= 0 || errno == EINTR else { return }
            if descriptors[1].revents != 0 { return }
            guard descriptors[0].revents != 0, let fd = try? Descriptors.accept(listener, timeoutSeconds: 0) else { continue }
            connections.update { _ = $0.insert(fd) }
            threads.enter()
            let thread = Thread { [self] in
                serve(fd)
                connections.update { _ = $0.remove(fd) }
                close(fd)
                threads.leave()
            }
            thread.name = "bench.count-connection"
            thread.start()
        }
    }

    private func serve(_ fd: CInt) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 64)
        defer { buffer.deallocate() }
        var decoder = RequestDecoder()
        var scanner = SequenceScanner()
        var numbers: [Int] = []
        numbers.reserveCapacity(1 << 12)
        var bodyBytes = 0
        func flush() {
            if !numbers.isEmpty || bodyBytes > 0 { current.get()?.mark(numbers, bytes: bodyBytes) }
            numbers.removeAll(keepingCapacity: true)
            bodyBytes = 0
        }
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            do {
                try decoder.feed(UnsafeRawBufferPointer(rebasing: buffer[0..<count])) { expectsContinue in
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
        if decoder.inRequest { current.get()?.requestAborted() }
    }
}
