import Foundation
import StreamUpTestSupport
import Testing

/// `-H` through the built binary: a header that would misframe the request, or whose value
/// would be cut or dropped, is a usage error before anything is sent; Host is passed on.
@Suite(.timeLimit(.minutes(2))) struct HeaderCommandTests {
    /// `Content-Length` (streamup sets it, or frames the body chunked), `Transfer-Encoding:
    /// identity` (an undelimited body) and a value with a line break (silently dropped) are
    /// refused with exit 64, naming the header; the server sees no request.
    @Test(arguments: [
        (
            "Content-Length: 5",
            "streamup: -H: 'Content-Length: 5': header Content-Length cannot be set: streamup sets it (a segment's complete body) or sends the body chunked (--single-request)\n"
        ),
        (
            "Transfer-Encoding: identity",
            "streamup: -H: 'Transfer-Encoding: identity': header Transfer-Encoding cannot be set: streamup frames the body itself (Content-Length, or chunked with --single-request)\n"
        ),
        (
            "X-Trace: a\r\nX-Evil: b",
            "streamup: -H: 'X-Trace: a\\r\\nX-Evil: b': the value of X-Trace contains a carriage return (CR); header values cannot hold line breaks, NUL or other control characters\n"
        ),
    ])
    func malformingHeaderIsAUsageError(header: String, message: String) async throws {
        let server = try StubHTTPServer(.answerAfterBody(status: 200))
        defer { server.stop() }
        let child = try StreamupProcess(["-H", header, server.url])
        child.write("data\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 64)
        #expect(child.stderr == message)
        #expect(server.receivedHeads.isEmpty)
    }

    /// `Host` is sent in place of the URL's (a virtual host reached by address).
    @Test func hostHeaderIsPassedOn() async throws {
        try await withSink { sink, _ in
            let child = try StreamupProcess(["-H", "Host: logs.internal", sink.url.absoluteString])
            child.write("data\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(sink.requests.last?.headers.first(named: "Host") == "logs.internal")
            #expect(sink.requests.last?.headers.filter { $0.name.lowercased() == "host" }.count == 1)
        }
    }

    /// `-v` shows the answer's header fields cleaned as the answer line is: a terminal escape
    /// code the server sends never reaches the terminal (each run of control characters is a space).
    @Test func verboseAnswerFieldsCarryNoEscapeCodes() async throws {
        let server = try StubHTTPServer(.answerAfterBody(status: 200, headers: ["X-Note: \u{1B}[31mred\u{1B}[0m\u{7}done"], body: "ok"))
        defer { server.stop() }
        let child = try StreamupProcess(["-v", server.url])
        child.write("line\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        #expect(!child.stderr.unicodeScalars.contains { $0.properties.generalCategory == .control && $0 != "\n" }, "stderr: \(child.stderr)")
        #expect(child.stderr.contains("[31mred [0m done\n"), "stderr: \(child.stderr)")
    }
}
