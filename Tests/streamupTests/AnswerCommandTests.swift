import Foundation
import StreamUpTestSupport
import Testing

/// The server's answer through the built binary: a 2xx body is the result (stdout or `-o`), an
/// error answer is one line on stderr, a redirect names where to go.
@Suite(.timeLimit(.minutes(2))) struct AnswerCommandTests {
    /// A 2xx answer's body is printed on stdout, as curl does (it used to be thrown away).
    @Test func successBodyGoesToStdout() async throws {
        let server = try StubHTTPServer(.answerAfterBody(status: 200, body: #"{"accepted":2}"#))
        defer { server.stop() }
        let child = try StreamupProcess([server.url])
        child.write("a\nb\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        #expect(child.stdout == #"{"accepted":2}"# + "\n")
        #expect(child.stderr.isEmpty)
    }

    /// `-o FILE` takes the body exactly as it came, and stdout stays empty.
    @Test func successBodyGoesToTheOutputFile() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url
        let file = directory.appendingPathComponent("answer.json").path
        let server = try StubHTTPServer(.answerAfterBody(status: 201, body: #"{"id":"u-1"}"#))
        defer { server.stop() }
        let child = try StreamupProcess(["--output", file, server.url])
        child.write("a\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == #"{"id":"u-1"}"#)
        #expect(child.stdout.isEmpty)
    }

    /// An `-o FILE` in a directory that does not exist is refused before anything is sent.
    @Test func unwritableOutputFileIsAUsageError() async throws {
        let server = try StubHTTPServer(.answerAfterBody(status: 200))
        defer { server.stop() }
        let child = try StreamupProcess(["-o", "/nonexistent-dir/answer.json", server.url])
        child.closeStdin()
        #expect(await child.waitForExit() == 64)
        #expect(child.stderr == "streamup: -o: the directory of '/nonexistent-dir/answer.json' does not exist\n")
        #expect(server.receivedHeads.isEmpty)
    }

    /// A 2xx whose body cannot be written (stdout's reader gone) fails with 74, and says the
    /// upload itself succeeded.
    @Test func successBodyWithoutStdoutFails() async throws {
        let server = try StubHTTPServer(.answerAfterBody(status: 200, body: "ok"))
        defer { server.stop() }
        let child = try StreamupProcess([server.url], stdout: .readerGone)
        child.write("a\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 74)
        #expect(
            child.stderr
                == "streamup: cannot write the server's answer (200 OK, the upload itself succeeded) to stdout: the reader of stdout has gone (broken pipe)\n")
    }

    /// An HTML error page is one line on stderr (it was printed over many lines, cut mid-word),
    /// once retries ran out.
    @Test func htmlErrorPageIsOneLine() async throws {
        let page =
            "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
        let server = try StubHTTPServer(.answerAfterBody(status: 502, headers: ["Content-Type: text/html"], body: page))
        defer { server.stop() }
        let child = try StreamupProcess(["--retries", "0", server.url])
        child.write("a\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 1)
        #expect(
            child.stderr
                == "streamup: server answered 502 Bad Gateway: 502 Bad Gateway nginx; 2 bytes read were not delivered and are lost (--spool DIR keeps them for the next start)\n"
        )
        #expect(child.stdout.isEmpty)
    }

    /// A redirect's Location is on the error line without -v.
    @Test func redirectNamesItsLocation() async throws {
        let server = try StubHTTPServer(.answerAfterBody(status: 308, headers: ["Location: /v2/ingest"]))
        defer { server.stop() }
        let child = try StreamupProcess(["--retries", "0", server.url])
        child.write("a\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 1)
        #expect(
            child.stderr
                == "streamup: server answered 308 Permanent Redirect: Location http://127.0.0.1:\(server.port)/v2/ingest; a streamed body cannot follow redirects, use that URL; "
                + "2 bytes read were not delivered and are lost (--spool DIR keeps them for the next start)\n"
        )
    }
}
