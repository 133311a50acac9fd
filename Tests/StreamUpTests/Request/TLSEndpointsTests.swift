import CStreamUpCurl
import Foundation
import Testing

@testable import StreamUp

/// Which transfers the libcurl hook gives an endpoint's TLS files: the handle's URL reduced to
/// scheme, host and port, as libcurl connects (`TLSHook.c`), for every spelling URLSession is
/// handed (`SessionURL`).
@Suite struct TLSEndpointsTests {
    @Test(arguments: [
        ("https://Logs.Example/ingest?x=1#f", "https://logs.example:443"),
        ("HTTPS://logs.example:8443", "https://logs.example:8443"),
        ("http://logs.example/", "http://logs.example:80"),
        ("https://user:p%40ss@logs.example:9/", "https://logs.example:9"),
        ("https://[::1]:9443/", "https://[::1]:9443"),
        ("https://[0:0::1]/", "https://[::1]:443"),
        // The spelling SessionURL hands URLSession for an IPv6 literal on this Foundation.
        ("https://%5B%3A%3A1%5D:9443/", "https://[::1]:9443"),
    ])
    func anEndpointIsSchemeHostAndPort(url: String, origin: String) {
        #expect(TLSEndpoints.origin(of: URL(string: url)!) == origin)
        #expect(Self.hookOrigin(url) == origin)
    }

    @Test(arguments: ["ftp://logs.example/", "https://logs.example:0/", "https://logs.example:99999/", "logs.example", "https://:8443/"])
    func anythingElseIsNoEndpoint(url: String) {
        #expect(Self.hookOrigin(url) == nil)
    }

    /// What the hook itself makes of the text libcurl holds as the handle's URL.
    private static func hookOrigin(_ url: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 512)
        guard streamup_tls_origin(url, &buffer, buffer.count) == 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
