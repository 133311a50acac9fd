import Foundation
import StreamUpTestSupport
import Testing

/// SIGINT/SIGTERM/SIGHUP through the built binary: each signal says in one line what it does,
/// the second what was lost or where it is kept; the signals that mean nothing to streamup are
/// ignored.
@Suite(.timeLimit(.minutes(2))) struct SignalCommandTests {
    /// Against a server that never answers: the first signal says how many bytes the stop
    /// still has to deliver; the second stops at once (130) and says they are lost or, with a
    /// spool, where they are kept. Counts are in words that agree with them ("1 byte").
    @Test(arguments: [
        ("line\n", false, "5 bytes", "5 bytes read were not delivered and are lost (--spool DIR keeps them for the next start)"),
        ("\n", false, "1 byte", "1 byte read was not delivered and is lost (--spool DIR keeps them for the next start)"),
        ("line\n", true, "5 bytes", "5 bytes the server did not acknowledge are kept in SPOOL; the next start with --spool SPOOL sends them first"),
    ])
    func eachSignalSaysWhatItDoes(input: String, spooled: Bool, held: String, lost: String) async throws {
        let scratch = try TemporaryDirectory()
        let spool = scratch.url.appendingPathComponent("spool").path
        let server = try StubHTTPServer(.stallUntilResumed)
        defer { server.stop() }
        let child = try StreamupProcess((spooled ? ["--spool", spool] : []) + [server.url])
        child.write(input)
        // Given a request that carries the input and is never answered,
        #expect(await eventually { server.isStalling })
        // the first signal says what the stop waits for,
        child.signal(SIGTERM)
        let first = "streamup: stopping (SIGTERM): delivering the \(held) still held, waiting at most 30s (a second SIGINT/SIGTERM stops at once)\n"
        #expect(await eventually { child.stderr.hasSuffix("\n") }, "no line after the first signal")
        #expect(child.stderr == first)
        // and the second what stopping at once leaves behind.
        child.signal(SIGINT)
        #expect(await child.waitForExit() == 130)
        #expect(child.stderr == first + "streamup: SIGINT again: stopped at once; \(lost.replacingOccurrences(of: "SPOOL", with: spool))\n")
    }

    /// streamup sending one line to `server`, which holds the request unanswered, then SIGHUP,
    /// once the request is there; returns when the stop's line is on stderr.
    private static func hungUpWhileALineIsInFlight(to server: StubHTTPServer) async throws -> StreamupProcess {
        let child = try StreamupProcess([server.url])
        child.write("line\n")
        #expect(await eventually { server.isStalling })
        child.signal(SIGHUP)
        #expect(await eventually { child.stderr.hasSuffix("\n") }, "no line after SIGHUP")
        return child
    }

    /// SIGHUP (what a closed terminal or ssh session sends to `tail -F … | streamup`) stops as
    /// SIGTERM does: the held line is delivered once the server answers, and the status is 0.
    /// A second SIGHUP (the shell passes the hangup on to its jobs) changes nothing.
    @Test func hangUpDeliversWhatIsHeld() async throws {
        let server = try StubHTTPServer(.stallUntilResumed)
        defer { server.stop() }
        // Given a request that carries the line and is not answered yet, a hangup says what the
        // stop waits for,
        let child = try await Self.hungUpWhileALineIsInFlight(to: server)
        #expect(
            child.stderr
                == "streamup: stopping (SIGHUP): delivering the 5 bytes still held, waiting at most 30s (a second SIGINT/SIGTERM stops at once)\n")
        // and a second one does not cut it short: the line arrives once the server reads it.
        child.signal(SIGHUP)
        server.resume()
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        #expect(server.receivedBodies.map { String(decoding: $0, as: UTF8.self) }.joined() == "line\n")
    }

    /// SIGTERM while the input is open and quiet (a FIFO whose writer is alive and says nothing,
    /// as a program that logs rarely) stops at once: the line read before is delivered, the
    /// reader waiting for more is woken, and the status is 0.
    @Test func terminateWhileTheInputIsOpenAndQuietStops() async throws {
        try await withSink { sink, directory in
            let scratch = try TemporaryDirectory()
            let fifo = scratch.url.appendingPathComponent("input").path
            try #require(mkfifo(fifo, 0o600) == 0)
            // Held open for reading and writing, so opening it for reading does not wait and the
            // input never ends while the test runs.
            let held = open(fifo, O_RDWR)
            try #require(held >= 0)
            defer { close(held) }
            let child = try StreamupProcess(["--metrics", "0", sink.url.absoluteString], stdinFile: fifo)
            #expect(write(held, "line\n", 5) == 5)
            #expect(await eventually { streamText(in: directory) == "line\n" })
            // The sink stores a body before it answers: wait until streamup has the answer too.
            let metrics = try #require(await MetricsCommandTests.metricsURL(of: child), "stderr: \(child.stderr)")
            let port = UInt16(metrics.port ?? 0)
            #expect(await MetricsCommandTests.scraped { MetricsCommandTests.sample("streamup_bytes_delivered_total", port: port) == 5 })
            child.signal(SIGTERM)
            #expect(await child.waitForExit(timeout: 10) == 0, "stderr: \(child.stderr)")
            #expect(child.stderr.contains("streamup: stopping (SIGTERM): nothing is held"), "stderr: \(child.stderr)")
        }
    }

    /// A hangup and then SIGTERM: the second stopping signal stops at once, as two SIGTERMs do.
    @Test func terminateAfterHangUpStopsAtOnce() async throws {
        let server = try StubHTTPServer(.stallUntilResumed)
        defer { server.stop() }
        let child = try await Self.hungUpWhileALineIsInFlight(to: server)
        child.signal(SIGTERM)
        #expect(await child.waitForExit() == 130)
        #expect(
            child.stderr.hasSuffix(
                "streamup: SIGTERM again: stopped at once; 5 bytes read were not delivered and are lost (--spool DIR keeps them for the next start)\n"))
    }

    /// SIGUSR1, SIGUSR2 and SIGALRM mean nothing to streamup: they are ignored (never a death
    /// that loses what is held); the input goes on and is delivered whole.
    @Test func straySignalsAreIgnored() async throws {
        try await withSink { sink, directory in
            let child = try StreamupProcess([sink.url.absoluteString])
            child.write("before\n")
            for number in [SIGUSR1, SIGUSR2, SIGALRM] { child.signal(number) }
            child.write("after\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(child.stderr.isEmpty, "stderr: \(child.stderr)")
            #expect(streamText(in: directory) == "before\nafter\n")
        }
    }
}

/// An input without a byte sends nothing (most receivers refuse an empty request) and ends
/// quietly with 0.
@Suite(.timeLimit(.minutes(2))) struct EmptyInputCommandTests {
    @Test func emptyStdinSendsNothingAndSaysNothing() async throws {
        try await withSink { sink, _ in
            let child = try StreamupProcess([sink.url.absoluteString])
            child.closeStdin()
            #expect(await child.waitForExit() == 0)
            #expect(child.stdout.isEmpty && child.stderr.isEmpty, "stdout: \(child.stdout) stderr: \(child.stderr)")
            #expect(sink.requests.isEmpty, "requests: \(sink.requests.map { "\($0.method) \($0.bodyByteCount) bytes" })")
        }
    }
}
