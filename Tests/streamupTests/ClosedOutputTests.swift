import Foundation
import StreamUpTestSupport
import Testing

/// Every command that prints, run with stdout or stderr closed (`>&-`, `2>&-`) or going into a
/// pipe whose reader has exited: no trap (Foundation's `FileHandle.write` is a `try!` on Linux
/// and used to end streamup with SIGILL); a dead stderr never changes the outcome, a dead
/// stdout fails a command only when what it printed was the point (exit 74).
@Suite(.timeLimit(.minutes(2))) struct ClosedOutputTests {
    /// `-v` with no stderr: the stream is delivered and the exit status is the server's (0).
    @Test(arguments: [StreamupProcess.Attachment.closed, .readerGone])
    func verboseUploadWithoutStderrStillDelivers(stderr: StreamupProcess.Attachment) async throws {
        try await withSink { sink, _ in
            let child = try StreamupProcess(["-v", sink.url.absoluteString], stderr: stderr)
            child.write("first line\n")
            child.write("second line\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 0)
            #expect(sink.requests.last?.bodyByteCount == "first line\nsecond line\n".utf8.count)
        }
    }

    /// A failure with no stderr still exits with its documented status (2: no answer).
    @Test(arguments: [StreamupProcess.Attachment.closed, .readerGone])
    func failureWithoutStderrKeepsItsExitStatus(stderr: StreamupProcess.Attachment) async throws {
        let child = try StreamupProcess(["-v", "--retries", "0", "http://127.0.0.1:\(unusedLocalPort())/"], stderr: stderr)
        child.write("data\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 2)
    }

    /// The help text and the version are the point of `--help` and `--version`: without a
    /// stdout to take them, exit 74 and say so on stderr.
    @Test(arguments: [StreamupProcess.Attachment.closed, .readerGone], [["--help"], ["--version"], ["sink", "--help"]])
    func helpWithoutStdoutFails(stdout: StreamupProcess.Attachment, arguments: [String]) async throws {
        let child = try StreamupProcess(arguments, stdout: stdout)
        child.closeStdin()
        #expect(await child.waitForExit() == 74)
        let expected = stdout == .closed ? "stdout is closed" : "the reader of stdout has gone (broken pipe)"
        #expect(child.stderr.hasPrefix("streamup: cannot write the "), "stderr: \(child.stderr)")
        #expect(child.stderr.hasSuffix("to stdout: \(expected)\n"), "stderr: \(child.stderr)")
    }

    /// A dry run's summary is its result: exit 74 when it cannot be printed.
    @Test func dryRunWithoutStdoutFails() async throws {
        let child = try StreamupProcess([], stdout: .closed)
        child.write("hello\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 74)
        #expect(child.stderr.contains("cannot write the dry run's summary to stdout: stdout is closed"))
    }

    /// An upload from a closed stdin (`<&-`) is refused with a usage error before anything is
    /// sent. (It used to read whatever descriptor took number 0 and fail with `Invalid
    /// argument (errno 22)`.)
    @Test func uploadFromAClosedStdinIsAUsageError() async throws {
        try await withSink { sink, _ in
            let child = try StreamupProcess([sink.url.absoluteString], stdin: .closed)
            #expect(await child.waitForExit() == 64)
            #expect(
                child.stderr
                    == "streamup: stdin is closed (<&-), so there is nothing to stream: pipe something in (tail -F app.log | streamup URL) or follow a file (streamup tail FILE URL)\n"
            )
            #expect(sink.requests.isEmpty)
        }
    }

    /// The sink's stdout is a log, not its point: with stdout closed or its reader gone it keeps
    /// receiving and storing, says once on stderr that the log stopped (when it was cut, not
    /// closed from the start), and exits 0 on SIGTERM.
    @Test(arguments: [StreamupProcess.Attachment.closed, .readerGone])
    func sinkWithoutStdoutKeepsServing(stdout: StreamupProcess.Attachment) async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url
        let port = unusedLocalPort()
        let sink = try StreamupProcess(["sink", "--port", "\(port)", "--output", directory.path], stdout: stdout)
        sink.closeStdin()
        #expect(await eventually { acceptsConnections(port: port) }, "the sink never listened; stderr: \(sink.stderr)")
        for index in 1...2 {
            let upload = try StreamupProcess(["http://127.0.0.1:\(port)/\(index)"])
            upload.write("line \(index)\n")
            upload.closeStdin()
            #expect(await upload.waitForExit() == 0, "stderr: \(upload.stderr)")
        }
        sink.signal(SIGTERM)
        #expect(await sink.waitForExit() == 0, "stderr: \(sink.stderr)")
        let stored = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".body") }
        #expect(stored.count == 2)
        if stdout == .readerGone {
            #expect(sink.stderr == "streamup: the reader of stdout has gone (broken pipe): no more lines are printed there; carrying on\n")
        } else {
            #expect(sink.stderr.isEmpty)
        }
    }
}
