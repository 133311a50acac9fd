import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The skeleton of the bench's own HTTP receivers: listens on 127.0.0.1 at a free port,
/// accepts connections on a thread of its own and serves each on a new thread with `serve`,
/// which owns the loop of `recv` calls and returns when the peer closes. ``stop(graceSeconds:)``
/// stops accepting, gives open connections time to end, then shuts them down and waits for
/// every thread.
///
/// Thread safety: the open connections are behind a `LockedValue`; every member is callable
/// from any thread.
final class ProbeServer: Sendable {
    let port: UInt16
    private let wake: (read: CInt, write: CInt)
    private let connections = LockedValue<Set<CInt>>([])
    private let threads = DispatchGroup()

    /// Listens (on `port`, or a free one) and starts accepting; `serve` runs once per
    /// connection, on its own thread, and the connection is closed when it returns.
    init(name: String, port: UInt16 = 0, serve: @escaping @Sendable (CInt) -> Void) throws(BenchError) {
        let (listener, port) = try Descriptors.listenOnLoopback(port: port)
        self.port = port
        do {
            wake = try Descriptors.pipe()
        } catch {
            close(listener)
            throw error
        }
        threads.enter()
        let thread = Thread { [self] in
            acceptLoop(listener, name: name, serve: serve)
            close(listener)
            threads.leave()
        }
        thread.name = "bench.\(name)-accept"
        thread.start()
    }

    var url: String { "http://127.0.0.1:\(port)/" }

    /// Connections open now.
    var openConnections: Int { connections.get().count }

    /// Stops accepting; waits up to `graceSeconds` for open connections to end by themselves,
    /// shuts down the rest, and waits for every thread.
    func stop(graceSeconds: Double) {
        _ = [UInt8(1)].withUnsafeBytes { Descriptors.writeAll(wake.write, $0) }
        let deadline = MonotonicClock.now() + UInt64(graceSeconds * 1e9)
        while openConnections > 0 && MonotonicClock.now() < deadline {
            MonotonicClock.sleep(seconds: 0.005)
        }
        for fd in connections.get() { shutdown(fd, CInt(SHUT_RDWR)) }
        threads.wait()
        close(wake.read)
        close(wake.write)
    }

    private func acceptLoop(_ listener: CInt, name: String, serve: @escaping @Sendable (CInt) -> Void) {
        while true {
            var descriptors = [
                pollfd(fd: listener, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0),
            ]
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
            thread.name = "bench.\(name)"
            thread.start()
        }
    }
}
