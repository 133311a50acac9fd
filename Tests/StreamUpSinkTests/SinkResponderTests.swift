import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUpSink

/// A sink made with a responder (what `--metrics` serves with): every request is answered by
/// the responder, with its status, content type and body, on a kept-alive connection; a body
/// is read and discarded, nothing is stored.
@Suite(.timeLimit(.minutes(1))) struct SinkResponderTests {
    @Test func everyRequestGetsTheRespondersAnswer() throws {
        let directory = try TemporaryDirectory()
        let asked = Locked<[String]>([])
        let server = try SinkServer(
            configuration: SinkConfiguration(outputDirectory: directory.url.path),
            responder: { method, target in
                asked.withLock { $0.append("\(method) \(target)") }
                return SinkAnswer(status: target == "/metrics" ? 200 : 404, contentType: "text/plain; version=0.0.4", body: "n 1\n")
            })
        server.start()
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        try client.send("GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n")
        let first = try client.readResponse()
        #expect(first.status == 200 && first.bodyText == "n 1\n")
        #expect(first.headers["content-type"] == "text/plain; version=0.0.4", "\(first.headers)")
        try client.send("POST /other HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello")
        let second = try client.readResponse()
        #expect(second.status == 404 && second.bodyText == "n 1\n")
        #expect(asked.withLock { $0 } == ["GET /metrics", "POST /other"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty, "a responder's server stores nothing")
    }
}
