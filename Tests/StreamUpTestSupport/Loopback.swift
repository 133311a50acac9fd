import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether this machine can listen on the IPv6 loopback address (some containers have none).
public let ipv6LoopbackAvailable: Bool = {
    let fd = socket(AF_INET6, POSIXCalls.streamSocket, 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_addr = in6addr_loopback
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
    } == 0
}()

/// Whether something accepts TCP connections on 127.0.0.1:`port` (one connection, closed at once).
public func acceptsConnections(port: UInt16) -> Bool {
    guard let fd = try? connectToLoopback(port: port) else { return false }
    close(fd)
    return true
}

/// A blocking TCP connection to 127.0.0.1:`port`: the connected descriptor, which the caller
/// owns and closes. Throws ``SocketCallError`` naming the call that failed.
public func connectToLoopback(port: UInt16) throws -> CInt {
    let fd = socket(AF_INET, POSIXCalls.streamSocket, 0)
    guard fd >= 0 else { throw SocketCallError(call: "socket", code: errno) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = port.bigEndian
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard result == 0 else {
        let code = errno
        close(fd)
        throw SocketCallError(call: "connect", code: code)
    }
    return fd
}

/// A socket call that failed in a test client, with its errno.
///
/// Thread safety: a value type.
public struct SocketCallError: Error, CustomStringConvertible {
    public var call: String
    public var code: CInt

    public var description: String { "\(call) to 127.0.0.1: errno \(code)" }
}
