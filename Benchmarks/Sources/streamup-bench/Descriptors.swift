#if canImport(Glibc)
import Glibc
#endif

/// Pipes, loopback sockets and whole-buffer I/O on raw descriptors. Every descriptor is
/// created close-on-exec; sends use `MSG_NOSIGNAL`, so a vanished peer is an error, not SIGPIPE.
///
/// Thread safety: stateless; each descriptor is used by one thread at a time by its owner.
enum Descriptors {
    /// A close-on-exec pipe; with `capacity`, the kernel buffer is enlarged (best effort).
    static func pipe(capacity: Int? = nil) throws(BenchError) -> (read: CInt, write: CInt) {
        var fds: [CInt] = [0, 0]
        // Glibc's module map hides pipe2/accept4; only the main thread spawns children, and it
        // is the one creating pipes, so no child can inherit one before FD_CLOEXEC is set.
        guard Glibc.pipe(&fds) == 0 else { throw BenchError.system("pipe") }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        if let capacity {
            // F_SETPIPE_SZ (<linux/fcntl.h>, not exported by Glibc's module); best effort.
            _ = fcntl(fds[1], 1031, CInt(clamping: capacity))
        }
        return (fds[0], fds[1])
    }

    /// Writes all of `bytes`; false when the reader is gone or another error occurs.
    static func writeAll(_ fd: CInt, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard var next = bytes.baseAddress else { return true }
        var remaining = bytes.count
        while remaining > 0 {
            let written = write(fd, next, remaining)
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            next += written
            remaining -= written
        }
        return true
    }

    /// Sends all of `bytes` on a socket; false when the peer is gone or another error occurs.
    static func sendAll(_ fd: CInt, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard var next = bytes.baseAddress else { return true }
        var remaining = bytes.count
        while remaining > 0 {
            let sent = send(fd, next, remaining, CInt(MSG_NOSIGNAL))
            if sent < 0 {
                if errno == EINTR { continue }
                return false
            }
            next += sent
            remaining -= sent
        }
        return true
    }

    static func sendAll(_ fd: CInt, _ text: String) -> Bool {
        Array(text.utf8).withUnsafeBytes { sendAll(fd, $0) }
    }

    /// A TCP socket listening on 127.0.0.1 at `port` (0: a free one).
    static func listenOnLoopback(port: UInt16 = 0) throws(BenchError) -> (fd: CInt, port: UInt16) {
        let fd = try tcpSocket()
        var one: CInt = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<CInt>.size))
        var address = loopback(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            let error = BenchError.system("bind/listen on 127.0.0.1")
            close(fd)
            throw error
        }
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, UInt16(bigEndian: local.sin_port))
    }

    /// Accepts one connection, waiting at most `timeoutSeconds`; nil on timeout.
    static func accept(_ listener: CInt, timeoutSeconds: Double) throws(BenchError) -> CInt? {
        var descriptor = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, CInt(timeoutSeconds * 1000))
        guard ready > 0 else { return nil }
        let fd = Glibc.accept(listener, nil, nil)
        guard fd >= 0 else { throw BenchError.system("accept") }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return fd
    }

    /// A TCP connection to 127.0.0.1:`port` with `TCP_NODELAY`.
    static func connectToLoopback(port: UInt16) throws(BenchError) -> CInt {
        let fd = try tcpSocket()
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let error = BenchError.system("connect to 127.0.0.1:\(port)")
            close(fd)
            throw error
        }
        var one: CInt = 1
        setsockopt(fd, CInt(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<CInt>.size))
        return fd
    }

    /// Raises the soft open-file limit to the hard limit (for many concurrent connections).
    static func raiseOpenFileLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    private static func tcpSocket() throws(BenchError) -> CInt {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw BenchError.system("socket") }
        return fd
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return address
    }
}
