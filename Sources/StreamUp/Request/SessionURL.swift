import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The spelling of an upload URL that URLSession accepts, and the way to name its host in
/// messages.
///
/// Why IPv6 literals need a spelling of their own: before it hands a URL to libcurl,
/// swift-corelibs-foundation checks that libcurl parses the same host as `URL.host`
/// (`_EasyHandle.set(url:)` calling `CFURLSessionCurlHostIsEqual`). For `http://[::1]:8080/`
/// libcurl answers `[::1]` and `URL.host` answers `::1`, so every IPv6 literal fails with
/// `URLError.badURL` (-1000) before a byte is sent: the two disagree on whether brackets belong
/// to the host (fixed on swift-corelibs-foundation's main in July 2026, in no release branch up
/// to release/6.4.x). Written
/// percent-encoded, `http://%5B%3A%3A1%5D:8080/`, the host is `[::1]` for both: `URL.host`
/// decodes it, and libcurl (7.88 here) decodes it, connects to ::1 and sends `Host: [::1]:8080`.
/// A fixed Foundation strips libcurl's brackets and would refuse that spelling instead, so
/// neither is assumed: both are put to the same check URLSession makes, found with `dlsym`,
/// with the address in the shortest form libcurl writes (`[0:0::1]` is `[::1]` to it).
/// A zone (`[fe80::1%25eth0]`) fails both ways (libcurl keeps it apart from the host): such a
/// URL gets nil.
///
/// The scheme is lowercased too: URLSession picks its protocol by the scheme as written, so
/// `HTTP://` failed as an unsupported URL (-1002).
///
/// Thread safety: stateless; the looked-up check is an immutable global. Callable from any thread.
enum SessionURL {
    /// The URL to hand URLSession for `url`, or nil when this Foundation cannot send to its host
    /// however it is spelled.
    static func forURLSession(_ url: URL) -> URL? {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return url }
        components.scheme = components.scheme?.lowercased()
        guard let lowercased = components.url else { return url }
        guard let host = components.host, host.hasPrefix("["), let check = HostCheck.urlSession else {
            return lowercased
        }
        // Spliced into the text: URLComponents would decode an encoded host back to `[::1]`.
        guard let text = components.string, let range = components.rangeOfHost else { return nil }
        // libcurl writes the address in its shortest form (`[0:0::1]` is `[::1]` to it).
        let canonical = canonicalIPv6(host).map { "[\($0)]" } ?? host
        guard let plain = URL(string: text.replacingCharacters(in: range, with: canonical)) else { return nil }
        if check.accepts(plain) { return plain }
        let encodedHost = canonical.unicodeScalars.map { scalar in
            scalar.properties.isASCIIHexDigit ? String(scalar) : "%" + String(scalar.value, radix: 16, uppercase: true)
        }.joined()
        guard let encoded = URL(string: text.replacingCharacters(in: range, with: encodedHost)), check.accepts(encoded) else {
            return nil
        }
        return encoded
    }

    /// `0:0::1` as `::1`, the form `inet_ntop(3)` writes (as libcurl does); nil for a host
    /// that is not a bare IPv6 address (a zone, `%25eth0`, is left alone).
    static func canonicalIPv6(_ bracketed: String) -> String? {
        guard bracketed.hasPrefix("["), bracketed.hasSuffix("]") else { return nil }
        var address = in6_addr()
        guard inet_pton(AF_INET6, String(bracketed.dropFirst().dropLast()), &address) == 1 else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The host as a URL writes it, brackets kept for IPv6 (`[::1]`), and the port when the
    /// URL names one: `[::1]:8080`, `logs.example`. Also for a URL from ``forURLSession(_:)``.
    static func authority(of url: URL) -> String {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        let host = components?.host ?? url.host ?? "?"
        let port = components?.port ?? url.port
        return host + (port.map { ":\($0)" } ?? "")
    }
}

/// corelibs Foundation's own test of whether libcurl and `URL.host` agree on a URL's host.
///
/// Thread safety: immutable; the C function keeps no state between calls.
private struct HostCheck: @unchecked Sendable {
    typealias Function = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>) -> Bool
    let function: Function

    /// The check in this process's FoundationNetworking, if it has one (not on Darwin, and not
    /// in a Foundation older than the check, where any spelling passes).
    static let urlSession: HostCheck? = {
        #if canImport(Glibc)
        guard let symbol = dlsym(nil, "CFURLSessionCurlHostIsEqual") else { return nil }
        return HostCheck(function: unsafeBitCast(symbol, to: Function.self))
        #else
        return nil
        #endif
    }()

    /// Whether URLSession would hand `url` to libcurl: the arguments `_EasyHandle.set(url:)`
    /// passes, the absolute string and `URL.host`.
    func accepts(_ url: URL) -> Bool {
        guard let host = url.host else { return false }
        return url.absoluteString.withCString { urlText in host.withCString { function(urlText, $0) } }
    }
}
