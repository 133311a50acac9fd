import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

/// The heartbeat monitor, run as the built binary against the real sink or a stalling server.
@Suite(.timeLimit(.minutes(2))) struct HeartbeatCommandTests {
    /// Decodes NDJSON into dictionaries, failing on any line that is not a JSON object.
    private func records(_ body: [UInt8]) throws -> [[String: Any]] {
        try body.split(separator: UInt8(ascii: "\n")).map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
        }
    }

    /// `--count N`: N records of valid JSON with the documented fields and seq 1...N.
    @Test func countedBeatsAreValidRecordsWithIncreasingSeq() async throws {
        try await withSink(configure: { $0.keepBodiesInMemory = true }) { sink, _ in
            let child = try StreamupProcess(["heartbeat", "--every", "50ms", "--count", "5", "--field", "app=billing", sink.url.absoluteString])
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let beats = try records(try #require(sink.requests.last?.body))
            #expect(beats.count == 5)
            #expect(beats.map { $0["seq"] as? Int } == [1, 2, 3, 4, 5])
            for beat in beats {
                let ts = try #require(beat["ts"] as? String)
                #expect(ts.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/) != nil)
                #expect(beat["host"] is String && beat["pid"] is Int && beat["uptime_s"] is Double)
                #expect(beat["app"] as? String == "billing")
                #expect(beat["skipped"] as? Int == 0)
            }
            #expect(sink.requests.last?.headers.first(named: "Content-Type") == "application/x-ndjson")
        }
    }

    /// `--format json`: the heartbeat formats each beat where it makes it; every record is the
    /// beat with the formatter's `time` added, in order, none lost.
    @Test func formattedBeatsAreWholeRecordsInOrder() async throws {
        try await withSink(configure: { $0.keepBodiesInMemory = true }) { sink, _ in
            let child = try StreamupProcess(["heartbeat", "--every", "20ms", "--count", "4", "--format", "json", sink.url.absoluteString])
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let beats = try sink.requests.flatMap { try records($0.body ?? []) }
            #expect(beats.map { $0["seq"] as? Int } == [1, 2, 3, 4])
            #expect(beats.allSatisfy { $0["time"] is String && $0["ts"] is String })
        }
    }

    /// Heartbeats take the delivery options like stdin: with `--resumable` through a sink that
    /// cuts a connection every 300 bytes, all beats arrive once, in order.
    @Test func beatsSurviveCutsInResumableMode() async throws {
        try await withSink(configure: { $0.faults = SinkFaults(dropAfterBytes: 300, dropRepeatedly: true) }) { sink, directory in
            let child = try StreamupProcess([
                "heartbeat", "--every", "20ms", "--count", "20", "--resumable", "--segment-seconds", "100ms", sink.url.absoluteString,
            ])
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let beats = try records(Array(try #require(streamText(in: directory)).utf8))
            #expect(beats.map { $0["seq"] as? Int } == Array(1...20))
            #expect(sink.requests.contains { !$0.isComplete }, "no connection was cut")
        }
    }

    /// `-- COMMAND`: beats while the command runs, a final record with its exit status, and
    /// streamup exits with that status.
    @Test func commandExitStatusIsReportedAndReturned() async throws {
        try await withSink(configure: { $0.keepBodiesInMemory = true }) { sink, _ in
            let child = try StreamupProcess(["heartbeat", "--every", "50ms", sink.url.absoluteString, "--", "sh", "-c", "sleep 0.3; exit 3"])
            #expect(await child.waitForExit() == 3, "stderr: \(child.stderr)")
            let beats = try records(try #require(sink.requests.last?.body))
            #expect(beats.count >= 2)
            let final = try #require(beats.last)
            #expect(final["event"] as? String == "exit")
            #expect(final["exit_status"] as? Int == 3)
            #expect((final["duration_s"] as? Double ?? 0) >= 0.3)
            #expect(beats.map { $0["seq"] as? Int ?? 0 } == Array(1...beats.count))
        }
    }

    /// A server that stops reading a single request: beats are skipped rather than queued (the
    /// skip count shows it), the client's memory stays flat, and once the server reads again the
    /// stream goes on.
    @Test(.enabled(if: Sanitizer.isOff, Comment(rawValue: Sanitizer.rssSkipReason)))
    func stalledLinkMakesBeatsCoalesceWithBoundedMemory() async throws {
        let server = try StubHTTPServer(.stallUntilResumed)
        defer { server.stop() }
        let child = try StreamupProcess([
            "heartbeat", "--single-request", "--every", "1ms", "--buffer-size", "1k", "--field", "pad=\(String(repeating: "p", count: 400))", server.url,
        ])
        // Given a stall long enough to fill the socket buffers and the 1 KiB buffer many times over.
        #expect(await eventually { server.isStalling })
        try await Task.sleep(for: .seconds(3))  // the scenario: the link is stalled this long
        let rssDuringStall = try residentKiB(child.process.processIdentifier)
        try await Task.sleep(for: .seconds(2))  // the scenario: ~2,000 more beats while still stalled
        let rssLater = try residentKiB(child.process.processIdentifier)
        // Then memory did not grow with the ~2,000 beats of the last two seconds (400+ bytes each).
        #expect(rssLater - rssDuringStall < 512, "RSS grew from \(rssDuringStall) KiB to \(rssLater) KiB")

        server.resume()
        child.signal(SIGTERM)
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        let beats = try records(try #require(server.receivedBodies.last))
        let skipped = beats.compactMap { $0["skipped"] as? Int }
        #expect(skipped.contains { $0 > 100 }, "no record reports skipped beats: \(skipped.filter { $0 > 0 }) of \(beats.count)")
        #expect(beats.map { $0["seq"] as? Int ?? 0 } == Array(1...beats.count))
        #expect(beats.last?["event"] as? String == "stop")
    }

    private func residentKiB(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
    }
}
