import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

/// Segmented delivery (`--retries`, `--segment-bytes`): the built binary against a sink that
/// fails on purpose. The sink merges segments by `Streamup-Stream-Id`/`Streamup-Offset`, so the
/// stored stream must equal the input byte for byte.
@Suite(.timeLimit(.minutes(2))) struct DeliveryCommandTests {
    /// 503s (with Retry-After) and a dropped connection: retried, nothing lost, no duplicate.
    @Test func failedSegmentsAreSentAgainAndNothingIsLost() async throws {
        let input = try await randomFile(bytes: 20 << 20)
        defer { try? FileManager.default.removeItem(atPath: input.path) }
        try await withSink(configure: { configuration in
            configuration.faults = SinkFaults(dropAfterBytes: 3_000_000, failNextRequests: 2, failStatus: 503, retryAfterSeconds: 0)
        }) { sink, directory in
            let child = try StreamupProcess(["--retries", "5", "--segment-bytes", "4MiB", sink.url.absoluteString], stdinFile: input.path)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(try await sha256sum(try #require(streamFile(in: directory))) == input.sha256)
            let statuses = sink.requests.map(\.status)
            #expect(statuses.prefix(3) == [503, 503, 0], "the faults were not hit: \(statuses)")
        }
    }

    /// 100 MB in 512 KiB segments through a sink that resets a connection every 1 MB: every
    /// cut segment is sent again from the last acknowledged byte, and the sink's de-duplication
    /// stores the stream exactly once. Long set: `DeliveryMachineTests.aBrokenConnectionSendsTheSameSegmentAgain`
    /// and ``failedSegmentsAreSentAgainAndNothingIsLost`` show the resend.
    @Test(.long) func plainSegmentsSurviveADropEveryMegabyte() async throws {
        let input = try await randomFile(bytes: 100_000_000)
        defer { try? FileManager.default.removeItem(atPath: input.path) }
        try await withSink(configure: { configuration in
            configuration.faults = SinkFaults(dropAfterBytes: 1_000_000, dropRepeatedly: true)
            configuration.recentEventLimit = 10_000
        }) { sink, directory in
            let child = try StreamupProcess(["--retries", "10", "--segment-bytes", "512k", sink.url.absoluteString], stdinFile: input.path)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(try await sha256sum(try #require(streamFile(in: directory))) == input.sha256)
            let cut = sink.requests.filter { !$0.isComplete }.count
            #expect(cut >= 90, "only \(cut) requests were cut")
        }
    }

    /// Segments that fit one libcurl read go to URLSession as `Data`, which it cannot send
    /// again: when a reused connection dies under one (libcurl would re-send the request by
    /// itself), the request ends and streamup sends the segment again whole. Nothing lost or
    /// stored twice, and no re-sent head waits for a body that never comes (the sink's 408).
    @Test func smallSegmentsCutOnAReusedConnectionAreSentAgainWhole() async throws {
        let lines = (0..<400).map { "line \($0) " + String(repeating: "x", count: 40) + "\n" }.joined()
        try await withSink(configure: { configuration in
            configuration.faults = SinkFaults(dropAfterBytes: 3_000, dropRepeatedly: true)
            configuration.idleTimeout = .milliseconds(500)
        }) { sink, directory in
            let child = try StreamupProcess(["--retries", "30", "--segment-bytes", "1k", sink.url.absoluteString])
            child.write(lines)
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(streamText(in: directory) == lines)
            #expect(sink.requests.contains { !$0.isComplete }, "no request was cut")
            #expect(!sink.requests.contains { $0.status == 408 }, "a re-sent request waited for its body: \(sink.requests.map(\.status))")
        }
    }

    /// The sink stores a segment but its answer is lost: streamup cannot know, sends the segment
    /// again, and the sink's de-duplication by `Streamup-Offset` stores it once.
    @Test func aLostAnswerCausesAResendThatIsStoredOnce() async throws {
        try await withSink(configure: { $0.faults = SinkFaults(loseAnswers: 1) }) { sink, directory in
            let child = try StreamupProcess(["--retries", "3", sink.url.absoluteString])
            child.write("first line\nsecond line\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let statuses = sink.requests.map(\.status)
            #expect(
                statuses.first == 0 && statuses.dropFirst().allSatisfy { $0 == 200 } && statuses.count >= 2, "the answer was not lost and re-sent: \(statuses)")
            #expect(streamText(in: directory) == "first line\nsecond line\n")
        }
    }

    /// A quiet stream against a server that cuts requests idle for 300 ms: segments open only
    /// when there is something to send, so a quiet spell many times that long costs no retries.
    @Test func aQuietStreamHoldsNoIdleRequestOpen() async throws {
        try await withSink(configure: { $0.idleTimeout = .milliseconds(300) }) { sink, directory in
            let child = try StreamupProcess(["--retries", "2", "--segment-seconds", "100ms", sink.url.absoluteString])
            child.write("before the quiet spell\n")
            #expect(await eventually { streamText(in: directory) == "before the quiet spell\n" })
            try await Task.sleep(for: .milliseconds(1_500))  // the scenario: five idle timeouts of silence
            child.write("after it\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(streamText(in: directory) == "before the quiet spell\nafter it\n")
            #expect(!sink.requests.contains { $0.status == 408 }, "a request sat idle until the server cut it")
        }
    }

    /// A final refusal is one line that says what to do and what was not delivered: a 401
    /// names the credentials options, and the bytes read are said lost (no spool).
    @Test func aFinalRefusalSaysWhatToDoAndWhatWasNotDelivered() async throws {
        let server = try StubHTTPServer(.answerAfterBody(status: 401, body: "token required"))
        defer { server.stop() }
        let child = try StreamupProcess([server.url])
        child.write("secret data\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 1)
        #expect(
            child.stderr
                == "streamup: server answered 401 Unauthorized: token required; check the credentials (-u, --bearer-token-file, --token-file, -H); "
                + "12 bytes read were not delivered and are lost (--spool DIR keeps them for the next start)\n")
    }

    /// Retries that run out say so, with the limit that ended them, and what was not delivered.
    @Test func exhaustedRetriesSaySoAndWhatWasNotDelivered() async throws {
        let server = try StubHTTPServer(.answerAfterBody(status: 503, body: "busy"))
        defer { server.stop() }
        let child = try StreamupProcess(["--retries", "1", server.url])
        child.write("data\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 1)
        let last = try #require(child.stderr.split(separator: "\n").last)
        #expect(
            last
                == "streamup: server answered 503 Service Unavailable: busy; gave up: retries ran out (--retries 1); "
                + "5 bytes read were not delivered and are lost (--spool DIR keeps them for the next start)")
    }

    /// After 429s a recovery does not speak of bytes sent again or held twice: a 429 stored
    /// nothing.
    @Test func aRecoveryFrom429sDoesNotWarnOfDuplicates() async throws {
        try await withSink(configure: { $0.faults = SinkFaults(failNextRequests: 2, failStatus: 429, retryAfterSeconds: 0) }) { sink, directory in
            let child = try StreamupProcess([sink.url.absoluteString])
            child.write("data\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(sink.requests.map(\.status) == [429, 429, 200])
            #expect(streamText(in: directory) == "data\n")
            #expect(child.stderr.contains("delivery recovered after 2 failed attempts"), "stderr: \(child.stderr)")
            #expect(!child.stderr.contains("sent again"), "stderr: \(child.stderr)")
        }
    }

    /// The sink goes away mid-stream and comes back on the same port: every byte arrives once.
    @Test func sinkDownForAWhileLosesNothing() async throws {
        _ = try await expectNothingLostAcrossASinkRestart(["--retries", "forever", "--segment-seconds", "200ms"])
    }

    /// A sink that stops reading mid-segment: with a 1 MiB buffer, 8 MiB of stdin wait
    /// in the pipe instead of being dropped; after the response timeout the segment is sent
    /// again and every byte arrives, once.
    @Test func stalledSinkTimesOutAndNothingIsDropped() async throws {
        let input = try await randomFile(bytes: 8 << 20)
        defer { try? FileManager.default.removeItem(atPath: input.path) }
        try await withSink(configure: { $0.faults = SinkFaults(stallAfterBytes: 100_000) }) { sink, directory in
            let child = try StreamupProcess([
                "-v", "--retries", "5", "--buffer-size", "1MiB", "--segment-bytes", "512k", "--records", "none",
                "--response-timeout", "1s", sink.url.absoluteString,
            ])
            let data = try Data(contentsOf: URL(fileURLWithPath: input.path))
            let writer = Task.detached {
                for start in stride(from: 0, to: data.count, by: 1 << 20) {
                    child.write(data.subdata(in: start..<min(start + (1 << 20), data.count)))
                }
                child.closeStdin()
            }
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            await writer.value
            #expect(try await sha256sum(try #require(streamFile(in: directory))) == input.sha256)
            // The stalled segment timed out and was sent again.
            let summary = try #require(child.stderr.split(separator: "\n").last { $0.contains("server answered 200") })
            let retries = summary.firstMatch(of: /retries (\d+)/).flatMap { Int($0.1) } ?? 0
            #expect(retries >= 1, "\(summary)")
        }
    }
}
