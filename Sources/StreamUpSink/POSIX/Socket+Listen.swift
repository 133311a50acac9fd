#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Socket {
    /// Creates a non-blocking TCP socket bound to `address` and listening (`socket(2)`,
    /// `setsockopt(2)` `SO_REUSEADDR`, `bind(2)`, `listen(2)`, `fcntl(2)` `O_NONBLOCK`).
    /// Non-blocking so that `accept` after `poll` can never hang on a connection the client
    /// reset in between.
    static func listening(on address: SocketAddress, backlog: CInt) throws(SinkError) -> Socket {
        let descriptor = try SystemCall.runBlocking("socket") {
            systemSocket(address.family, SocketAddress.streamSocketType, 0)
        }
        let socket = Socket(owning: descriptor)
        do {
            try socket.setOption(SOL_SOCKET, SO_REUSEADDR, 1 as CInt, name: "setsockopt(SO_REUSEADDR)")
            var storage = address.storage
            let length = address.length
            _ = try SystemCall.runBlocking("bind") {
                withUnsafePointer(to: &storage) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { systemBind(descriptor, $0, length) }
                }
            }
            _ = try SystemCall.runBlocking("listen") { systemListen(descriptor, backlog) }
            try socket.setNonBlocking(true)
        } catch {
            socket.close()
            throw error
        }
        return socket
    }

    /// The address the socket is bound to (`getsockname(2)`).
    func localAddress() throws(SinkError) -> SocketAddress {
        var address = SocketAddress()
        _ = try SystemCall.runBlocking("getsockname") {
            withUnsafeMutablePointer(to: &address.storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    systemGetSocketName(descriptor, $0, &address.length)
                }
            }
        }
        return address
    }

    /// Accepts one connection (`accept(2)`) and stores the client's address in `peer`.
    /// Returns `nil` when there is nothing to accept right now or the connection was aborted
    /// before it could be accepted (`ECONNABORTED`).
    func accept(peer: inout SocketAddress) throws(SinkError) -> Socket? {
        peer = SocketAddress()
        let outcome: SystemCall.Outcome<CInt>
        do {
            outcome = try SystemCall.run("accept") {
                withUnsafeMutablePointer(to: &peer.storage) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        systemAccept(descriptor, $0, &peer.length)
                    }
                }
            }
        } catch  where error.errno == ECONNABORTED {
            return nil
        }
        switch outcome {
        case .done(let connection):
            return Socket(owning: connection)
        case .wouldBlock:
            return nil
        }
    }
}

@inline(__always) private func systemSocket(_ family: CInt, _ type: CInt, _ proto: CInt) -> CInt {
    socket(family, type, proto)
}

@inline(__always) private func systemBind(_ fd: CInt, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> CInt {
    bind(fd, address, length)
}

@inline(__always) private func systemListen(_ fd: CInt, _ backlog: CInt) -> CInt {
    listen(fd, backlog)
}

@inline(__always) private func systemGetSocketName(
    _ fd: CInt, _ address: UnsafeMutablePointer<sockaddr>, _ length: UnsafeMutablePointer<socklen_t>
) -> CInt {
    getsockname(fd, address, length)
}

@inline(__always) private func systemAccept(
    _ fd: CInt, _ address: UnsafeMutablePointer<sockaddr>, _ length: UnsafeMutablePointer<socklen_t>
) -> CInt {
    accept(fd, address, length)
}
