import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Several endpoints (`streamup URL1 URL2 …`, `--endpoints failover|balance`), through the built
/// binary against real receivers: with one down every line arrives once, balance gives both
/// receivers segments, a receiver that stops and comes back is used again, and the combinations
/// that cannot span endpoints are usage errors.
@Suite(.timeLimit(.minutes(3))) struct EndpointCommandTests {
    /// Failover with the first endpoint down (nobody listens on its port) and a Loki validator
    /// second: the preset's push path goes on each URL, every line arrives once, and the line on
    /// stderr names the endpoint that failed.
    @Test func failoverWithTheFirstDownDeliversEveryLineOnce() async throws {
        let dead = "http://127.0.0.1:\(unusedLocalPort())"
        let lines = (0..<2000).map { "line \($0) of the stream" }
        try await ReceiverValidator.with("loki") { validator in
            let child = try StreamupProcess(["--to", "loki", "--segment-bytes", "20000", dead, validator.url.absoluteString])
            let input = Data(lines.map { $0 + "\n" }.joined().utf8)
            Thread.detachNewThread {
                child.write(input)
                child.closeStdin()
            }
            #expect(await child.waitForExit(timeout: 120) == 0, "stderr: \(child.stderr)")
            let snapshot = try await validator.snapshot()
            #expect(snapshot.errors.isEmpty, "\(snapshot.errors.prefix(3))")
            #expect(snapshot.requests > 2)
            #expect(Self.counts(snapshot.text) == Self.counts(lines), "every line once")
            #expect(child.stderr.contains("\(dead)/loki/api/v1/push"), "stderr: \(child.stderr)")
            #expect(child.stderr.contains("is set aside"), "stderr: \(child.stderr)")
        }
    }

    /// Balance over two sinks: both get segments; one stops mid-run (its segments go to the
    /// other at once) and starts again on its port (it is probed back and gets segments again);
    /// across the two every line is stored once.
    @Test func balanceSpreadsSegmentsAndSurvivesAReceiverRestart() async throws {
        let first = try TemporaryDirectory()
        let second = try TemporaryDirectory()
        var a = try startedSink(port: 0, storingIn: first.url)
        let b = try startedSink(port: 0, storingIn: second.url)
        defer { b.stop() }
        let child = try StreamupProcess([
            "--endpoints", "balance", "--retries", "forever", "--segment-seconds", "20ms", a.url.absoluteString, b.url.absoluteString,
        ])
        var written: [String] = []
        /// Writes one line and waits until a receiver stored it (one segment each).
        func send(_ line: String) async -> Bool {
            written.append(line)
            child.write(line + "\n")
            func isStored() -> Bool { Self.stored(first.url).contains(line) || Self.stored(second.url).contains(line) }
            _ = await eventually { isStored() || !child.process.isRunning }
            return isStored()
        }
        for index in 0..<10 { #expect(await send("both up \(index)"), "stderr: \(child.stderr)") }
        #expect(Self.stored(first.url).count >= 4 && Self.stored(second.url).count >= 4, "round robin")
        // Given the last line went to b after a's answer came back, a stops.
        if Self.stored(second.url).last != written.last { #expect(await send("both up, one more")) }
        a.stop()
        let storedAtA = Self.stored(first.url).count
        for index in 0..<10 { #expect(await send("a down \(index)")) }
        #expect(Self.stored(first.url).count == storedAtA)
        // When a is back on its port, a later segment probes it and it gets segments again.
        a = try startedSink(port: a.port, storingIn: first.url)
        defer { a.stop() }
        var index = 0
        while Self.stored(first.url).count == storedAtA, index < 400, child.process.isRunning {
            #expect(await send("a back \(index)"))
            index += 1
        }
        #expect(Self.stored(first.url).count > storedAtA, "a was used again")
        child.closeStdin()
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        #expect(Self.counts(Self.stored(first.url) + Self.stored(second.url)) == Self.counts(written), "every line once")
        #expect(child.stderr.contains("\(a.url.absoluteString): "), "the failure names the endpoint: \(child.stderr)")
        #expect(child.stderr.contains("\(a.url.absoluteString) answers again"), "stderr: \(child.stderr)")
    }

    /// `tail` takes several URLs alike: with failover and the first endpoint down, every line of
    /// the followed file reaches the second once.
    @Test func tailFailsOverToo() async throws {
        let scratch = try TemporaryDirectory()
        let log = scratch.url.appendingPathComponent("app.log").path
        let lines = (0..<300).map { "tail line \($0)" }
        try Data(lines.map { $0 + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: log))
        try await withSink { sink, directory in
            let child = try StreamupProcess([
                "tail", "--from-start", "--segment-bytes", "2000", log, "http://127.0.0.1:\(unusedLocalPort())/", sink.url.absoluteString,
            ])
            #expect(await eventually { Self.stored(directory).count == lines.count }, "stderr: \(child.stderr)")
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(Self.counts(Self.stored(directory)) == Self.counts(lines))
        }
    }

    /// `heartbeat` takes several URLs alike: with balance over a dead port and a sink, every
    /// beat reaches the sink once, in order.
    @Test func heartbeatBalancesToo() async throws {
        try await withSink { sink, directory in
            let child = try StreamupProcess([
                "heartbeat", "--every", "20ms", "--count", "20", "--endpoints", "balance", "--segment-seconds", "50ms",
                "http://127.0.0.1:\(unusedLocalPort())/", sink.url.absoluteString,
            ])
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let seqs = Self.stored(directory).compactMap { line -> Int? in
                let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                return object?["seq"] as? Int
            }
            #expect(seqs.sorted() == Array(1...20), "stderr: \(child.stderr)")
        }
    }

    /// What cannot span endpoints is refused with one line and exit 64.
    @Test func combinationsThatCannotSpanEndpointsAreUsageErrors() async throws {
        for (arguments, message) in [
            (["--resumable", "http://a/", "http://b/"], "--resumable cannot go with 2 URLs: a resumable upload lives at one endpoint"),
            (["--single-request", "http://a/", "http://b/"], "--single-request cannot go with 2 URLs: one request goes to one endpoint"),
            (["--endpoints", "balance", "http://a/"], "--endpoints balance needs two URLs or more"),
            (["--endpoints", "random", "http://a/", "http://b/"], "--endpoints: 'random' is not failover or balance"),
        ] {
            let child = try StreamupProcess(arguments)
            child.closeStdin()
            #expect(await child.waitForExit() == 64)
            #expect(child.stderr == "streamup: \(message)\n")
        }
    }

    /// The lines a sink stored in `directory`, over all its stream files (one per stretch of
    /// the stream an endpoint got: `stream-ID.body`, `stream-ID-from-OFFSET.body`).
    static func stored(_ directory: URL) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasPrefix("stream-") && $0.hasSuffix(".body") }.sorted().flatMap { name -> [String] in
            let text = (try? String(contentsOfFile: directory.appendingPathComponent(name).path, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").map(String.init)
        }
    }

    /// How often each line occurs.
    static func counts(_ lines: [String]) -> [String: Int] {
        lines.reduce(into: [:]) { $0[$1, default: 0] += 1 }
    }
}
