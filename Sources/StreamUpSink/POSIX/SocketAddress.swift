#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 socket address in a `sockaddr_storage`, with helpers to resolve a host
/// (`getaddrinfo(3)`) and to print one (`inet_ntop(3)`).
///
/// Thread safety: a value type that is never shared.
struct SocketAddress {
    var storage = sockaddr_storage()
    var length: socklen_t = socklen_t(MemoryLayout<sockaddr_storage>.size)

    var family: CInt { CInt(storage.ss_family) }

    /// Resolves `host` (a numeric address or a name such as `localhost`) for a listening TCP
    /// socket on `port`, taking the first result.
    static func resolve(host: String, port: UInt16) throws(SinkError) -> SocketAddress {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = streamSocketType
        hints.ai_flags = AI_PASSIVE
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            let reason = status == 0 ? "no address" : String(cString: gai_strerror(status))
            throw SinkError(.invalidAddress, operation: "getaddrinfo", detail: reason, summary: "cannot listen on \(host)")
        }
        defer { freeaddrinfo(list) }
        var address = SocketAddress()
        let count = Int(first.pointee.ai_addrlen)
        withUnsafeMutableBytes(of: &address.storage) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(start: first.pointee.ai_addr, count: count))
        }
        address.length = first.pointee.ai_addrlen
        return address
    }

    /// The port in host byte order.
    var port: UInt16 {
        withUnsafeBytes(of: storage) { raw in
            switch family {
            case AF_INET:
                UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
            case AF_INET6:
                UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
            default:
                0
            }
        }
    }

    /// The numeric host, without brackets (`127.0.0.1`, `::1`).
    var host: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let ok: Bool = withUnsafeBytes(of: storage) { raw in
            switch family {
            case AF_INET:
                var address = raw.load(as: sockaddr_in.self).sin_addr
                return inet_ntop(AF_INET, &address, &text, socklen_t(text.count)) != nil
            case AF_INET6:
                var address = raw.load(as: sockaddr_in6.self).sin6_addr
                return inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil
            default:
                return false
            }
        }
        guard ok else { return "?" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `host:port`, with brackets around an IPv6 host.
    var hostAndPort: String {
        family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    #if canImport(Glibc)
    static let streamSocketType = CInt(SOCK_STREAM.rawValue)
    #else
    static let streamSocketType = SOCK_STREAM
    #endif
}
