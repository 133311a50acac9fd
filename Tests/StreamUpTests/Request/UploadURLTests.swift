import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// ``UploadConfiguration/url(from:)`` and the URL handed to URLSession (``SessionURL``): the
/// spellings people type work, the ones that cannot are refused up front in one line.
@Suite struct UploadURLTests {
    /// The scheme is matched without regard to case and lowercased (URLSession only knows
    /// `http` and `https` as written).
    @Test func schemeIsCaseInsensitive() throws {
        #expect(try UploadConfiguration.url(from: "HTTP://logs.example/in").absoluteString == "http://logs.example/in")
        #expect(try UploadConfiguration.url(from: "Https://logs.example/").scheme == "https")
        #expect(SessionURL.forURLSession(URL(string: "HTTP://logs.example:8080/in")!)?.absoluteString == "http://logs.example:8080/in")
    }

    /// A port outside 1-65535 is refused, naming the URL and the port.
    @Test(arguments: ["99999", "0", "65536"])
    func portOutOfRangeIsRefused(port: String) throws {
        let error = #expect(throws: StreamUpError.self) { try UploadConfiguration.url(from: "http://127.0.0.1:\(port)/x") }
        #expect(error?.code == .invalidURL)
        #expect(error?.description == "'http://127.0.0.1:\(port)/x': port \(port) is out of range (1-65535)")
        #expect(try UploadConfiguration.url(from: "http://127.0.0.1:65535/x").port == 65535)
    }

    /// A ':' with no port after it is refused, not taken as the scheme's default port (a
    /// receiver on port 80 that is not there was retried for ever, the lines naming no port).
    @Test(arguments: ["http://127.0.0.1:/ingest", "http://user:pw@logs.example:", "https://[::1]:?q=1"])
    func anEmptyPortIsRefused(string: String) throws {
        let error = #expect(throws: StreamUpError.self) { try UploadConfiguration.url(from: string) }
        #expect(error?.code == .invalidURL)
        #expect(error?.description.contains("the port after") == true, "\(String(describing: error))")
        #expect(try UploadConfiguration.url(from: "http://user:pw@logs.example/a:b").port == nil)
        #expect(try UploadConfiguration.url(from: "http://[::1]/in").host != nil)
    }

    /// An IPv6 URL keeps the spelling people read; URLSession gets one it accepts; messages name
    /// the host with its brackets.
    @Test func ipv6LiteralKeepsItsBracketsAndPassesURLSessionsHostCheck() throws {
        let url = try UploadConfiguration.url(from: "http://[::1]:8080/in?x=1")
        #expect(url.absoluteString == "http://[::1]:8080/in?x=1")
        let session = try #require(SessionURL.forURLSession(url))
        #expect(session.port == 8080 && session.path == "/in" && session.query == "x=1")
        #expect(SessionURL.authority(of: url) == "[::1]:8080")
        #expect(SessionURL.authority(of: session) == "[::1]:8080")
        #expect(SessionURL.canonicalIPv6("[0:0::1]") == "::1")
    }

    /// An address with a zone cannot be sent to through URLSession on Linux, however it is
    /// spelled: a one-line error instead of `URLError -1000` at send time.
    @Test func ipv6ZoneIsRefusedUpFront() {
        let error = #expect(throws: StreamUpError.self) { try UploadConfiguration.url(from: "http://[fe80::1%25lo]:8080/") }
        #expect(error?.code == .invalidURL)
        #expect(error?.description.hasPrefix("'http://[fe80::1%25lo]:8080/': URLSession on this system cannot send to [fe80::1%lo]") == true)
    }
}

extension InProcessUploads {
    /// Uploads over the URLs that used to fail with URLError -1000 / -1002 at send time.
    @Suite(.timeLimit(.minutes(1))) struct UploadURLDeliveryTests {
        /// `http://[::1]:PORT/` reaches a sink listening on the IPv6 loopback address.
        @Test(.enabled(if: ipv6LoopbackAvailable)) func ipv6LiteralReachesTheServer() async throws {
            try await SinkServer.withRunning(SinkConfiguration(host: "::1", keepBodiesInMemory: true)) { sink in
                let url = try UploadConfiguration.url(from: "http://[::1]:\(sink.port)/v6")
                let uploader = try StreamUploader(UploadConfiguration(url: url), options: .singleRequest)
                let response = try await uploader.run(ChunksProducer(chunks: [Array("over IPv6\n".utf8)]))
                #expect(response.isSuccess)
                let event = try #require(sink.requests.last)
                #expect(event.path == "/v6" && event.bodyByteCount == 10)
                #expect(event.headers.first(named: "Host") == "[::1]:\(sink.port)")
            }
        }

        /// A URL with an upper-case scheme, built by a library user, is sent.
        @Test func upperCaseSchemeReachesTheServer() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                let url = try #require(URL(string: "HTTP://127.0.0.1:\(sink.port)/upper"))
                let response = try await StreamUploader(UploadConfiguration(url: url), options: .singleRequest).run(ChunksProducer(chunks: [Array("x".utf8)]))
                #expect(response.isSuccess)
                #expect(sink.requests.last?.path == "/upper")
            }
        }
    }
}
