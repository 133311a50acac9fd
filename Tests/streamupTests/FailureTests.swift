import Foundation
import StreamUpTestSupport
import Testing

/// What the binary does when the other end fails: one clear line on stderr, non-zero exit.
@Suite(.timeLimit(.minutes(2))) struct FailureTests {
    /// A 500 answer (as one request, or in segments once retries run out): exit 1, and the
    /// status and the start of the body on stderr.
    @Test(arguments: [["--single-request"], ["--retries", "0"]])
    func serverErrorGivesExitOneWithStatusAndBody(mode: [String]) async throws {
        let server = try StubHTTPServer(.answerAfterBody(status: 500, body: "disk full"))
        defer { server.stop() }
        let child = try StreamupProcess(mode + [server.url])
        child.write("some data\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 1)
        #expect(child.stderr.contains("500"))
        #expect(child.stderr.contains("disk full"))
    }

    /// A 401 sent before the body ends (with a challenge): exit 1 with the status, no hang.
    @Test func unauthorizedAnswerGivesExitOne() async throws {
        let server = try StubHTTPServer(.answerEarly(status: 401, headers: ["WWW-Authenticate: Bearer"], body: "token required"))
        defer { server.stop() }
        let child = try StreamupProcess([server.url])
        child.write("secret data\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 1)
        #expect(child.stderr.contains("401"))
    }

    /// A 200 answered before the live body ended (gunicorn with a WSGI app that reads only
    /// `Content-Length` answers a chunked request at once, having read none of it: seen in a
    /// trial, 2026-11-25) acknowledges nothing: the stream was not read to its end. streamup
    /// says so and exits 2 instead of 0, stdin still open, rather than reporting it delivered.
    @Test func successAnsweredBeforeTheLiveBodyEndedIsNotDelivery() async throws {
        let server = try StubHTTPServer(.answerEarly(status: 200, body: "ok"))
        defer { server.stop() }
        let child = try StreamupProcess(["--single-request", server.url])
        child.write("first line\n")
        #expect(await eventually { !server.receivedHeads.isEmpty })
        // The early answer is noticed when the body's next byte comes (DesignNotes, fact 3).
        child.write("second line\n")
        #expect(await child.waitForExit() == 2, "stderr: \(child.stderr)")
        #expect(child.stderr.contains("answered 200 before the request body ended"), "stderr: \(child.stderr)")
        child.closeStdin()
    }

    /// The same in segments: a server that answers 200 after reading only the head (then
    /// drains and drops the rest) does not hold the segment. streamup sees that the answer came
    /// before the body's end, sends the segment again, and when every resend meets the same,
    /// stops with a line that says so and what was not delivered (exit 2), instead of exit 0.
    @Test func successAnsweredBeforeASegmentEndedIsNotDelivery() async throws {
        let server = try StubHTTPServer(.answerEarly(status: 200, body: "ok"))
        defer { server.stop() }
        let input = try await randomFile(bytes: 6 << 20)
        defer { try? FileManager.default.removeItem(atPath: input.path) }
        // Segments far larger than socket buffers: libcurl is still sending when the answer ends.
        let child = try StreamupProcess(["--segment-bytes", "4MiB", "--buffer-size", "16MiB", server.url], stdinFile: input.path)
        defer { if !child.hasExited { child.signal(SIGKILL) } }
        #expect(await child.waitForExit() == 2, "stderr: \(child.stderr)")
        let lines = child.stderr.split(separator: "\n")
        #expect(
            lines.first?.hasPrefix("streamup: delivery is failing: the server answered 200 before the request body ended") == true, "stderr: \(child.stderr)")
        let last = try #require(lines.last)
        #expect(last.contains("it did not read the rest, so the segment is not delivered"), "stderr: \(child.stderr)")
        #expect(last.contains("were not delivered and are lost"), "stderr: \(child.stderr)")
        // The first try and three resends of the first segment.
        #expect(server.receivedHeads.count == 4)
    }

    /// A 2xx whose body never ends, arriving fast: the first 64 KiB are kept and the rest is not
    /// read; the status stands (the segment is not sent again) and the stream goes on.
    @Test func aNeverEndingAnswerIsCutAfterWhatIsKept() async throws {
        try await expectEndlessAnswerCut(.answerWithEndlessBody(status: 200), timeout: "60s") { kept in
            #expect(kept == 65536)
        }
    }

    /// A 2xx whose body trickles on for ever (never idle long enough for the idle timer):
    /// --response-timeout bounds the whole answer, which is cut there with what came.
    @Test func aTricklingAnswerIsCutAtTheResponseTimeout() async throws {
        try await expectEndlessAnswerCut(.answerWithEndlessBody(status: 200, pieceBytes: 16, interval: .milliseconds(100)), timeout: "2s") { kept in
            #expect(kept > 0 && kept < 65536)
        }
    }

    /// Two segments against `behaviour`: each answered once (no resend), streamup exits 0 and
    /// prints the kept part of the last answer, which `check` is given the size of.
    private func expectEndlessAnswerCut(_ behaviour: StubHTTPServer.Behaviour, timeout: String, check: (Int) -> Void) async throws {
        let server = try StubHTTPServer(behaviour)
        defer { server.stop() }
        let child = try StreamupProcess(["--response-timeout", timeout, server.url])
        defer { if !child.hasExited { child.signal(SIGKILL) } }
        child.write("first\n")
        #expect(await eventually { server.closedConnections == 1 }, "stderr: \(child.stderr)")
        child.write("second\n")
        child.closeStdin()
        #expect(await child.waitForExit(timeout: 30) == 0, "stderr: \(child.stderr)")
        #expect(server.receivedHeads.count == 2)
        let printed = child.stdoutData
        #expect(printed.dropLast().allSatisfy { $0 == UInt8(ascii: "x") } && printed.last == UInt8(ascii: "\n"))
        check(printed.count - 1)
        #expect(child.stderr.contains("only the first \(printed.count - 1) bytes of the answer are kept"), "stderr: \(child.stderr)")
    }

    /// A Basic challenge would make URLSession send the body again, which a live body cannot
    /// do: the challenge is declined and the 401 is the answer; no hang, no re-send.
    @Test func basicChallengeDoesNotHangOrResend() async throws {
        let server = try StubHTTPServer(.answerAfterBody(status: 401, headers: ["WWW-Authenticate: Basic realm=\"logs\""], body: "who are you"))
        defer { server.stop() }
        let child = try StreamupProcess([server.url])
        child.write("secret data\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 1, "stderr: \(child.stderr)")
        #expect(child.stderr.contains("401"))
        #expect(server.receivedHeads.count == 1)
    }

    /// Nothing listening (as one request, or in segments once retries run out): one clear
    /// "connection refused" line and exit 2.
    @Test(arguments: [["--single-request"], ["--retries", "0"]])
    func refusedConnectionIsOneClearLine(mode: [String]) async throws {
        let child = try StreamupProcess(mode + ["http://127.0.0.1:\(unusedLocalPort())/"])
        child.write("data\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 2)
        #expect(child.stderr.contains("connection refused"))
        #expect(child.stderr.split(separator: "\n").count == 1)
    }

    /// The server hangs up mid-stream without answering: a clear error and exit 2.
    @Test(arguments: [["--single-request"], ["--retries", "0", "--records", "none"]])
    func serverClosingMidStreamIsAnError(mode: [String]) async throws {
        let server = try StubHTTPServer(.hangUpAfter(bytes: 100_000))
        defer { server.stop() }
        let child = try StreamupProcess(mode + [server.url])
        let chunk = Data(repeating: 65, count: 64 * 1024)
        // Keep writing until streamup gives up (its stdin pipe then breaks).
        let writer = Thread {
            for _ in 0..<200 { child.write(chunk) }
            child.closeStdin()
        }
        writer.start()
        #expect(await child.waitForExit() == 2)
        #expect(child.stderr.contains("streamup: "))
    }

    /// A malformed URL: exit 64 (usage) and a line naming it.
    @Test func malformedURLIsAUsageError() async throws {
        let child = try StreamupProcess(["ftp:/nope"])
        child.closeStdin()
        #expect(await child.waitForExit() == 64)
        #expect(child.stderr.contains("ftp:/nope"))
    }
}

extension FailureTests {
    /// After SIGTERM, a server that never answers does not keep streamup forever: it gives up
    /// after --shutdown-timeout with a clear line and exit 2.
    @Test func shutdownTimeoutBoundsTheWaitForAnAnswer() async throws {
        let server = try StubHTTPServer(.stallUntilResumed)
        defer { server.stop() }
        let child = try StreamupProcess(["--shutdown-timeout", "1s", server.url])
        child.write("line\n")
        #expect(await eventually { server.isStalling })
        child.signal(SIGTERM)
        #expect(await child.waitForExit() == 2)
        #expect(child.stderr.contains("shutdown timeout"))
    }
}
