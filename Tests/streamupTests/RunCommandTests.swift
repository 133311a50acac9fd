import Foundation
import StreamUp
import StreamUpTestSupport
import Testing

@testable import streamup

/// `streamup run FILE`: the pipelines file as the parser reads it, and the built binary
/// running several pipelines into the sink through reloads and a failing pipeline.
@Suite(.timeLimit(.minutes(2))) struct RunCommandTests {
    /// Continued lines, quotes, `${NAME}` and `--name` make the pipelines; comments and blank
    /// lines make none; a pipeline that is not tail, heartbeat or journal, an unset name or a
    /// shared state file is refused naming its line.
    @Test func theFileParsesLineByLine() throws {
        let text = """
            # comment

            tail --name app '/var/log/app/*.log' \\
              -H "Authorization: Bearer ${TOKEN}" http://h/x
            heartbeat --every 5s http://h/beat
            """
        let file = try PipelineFile.parse(text, environment: ["TOKEN": "s e"])
        #expect(file.pipelines.map(\.name) == ["app", "5"])
        #expect(file.pipelines.map(\.line) == [3, 5])
        #expect(file.pipelines[0].words == ["tail", "/var/log/app/*.log", "-H", "Authorization: Bearer s e", "http://h/x"])
        // A service's pipeline retries through an outage of any length unless its line says.
        guard case .tail(let tail) = file.pipelines[0].command,
            case .heartbeat(let beat) = try PipelineFile.parse("heartbeat --retries 3 http://h", environment: [:]).pipelines[0].command
        else {
            Issue.record("not a tail and a heartbeat")
            return
        }
        #expect(tail.upload.delivery.retries == .some(nil))
        #expect(beat.upload.delivery.retries == .some(3))
        #expect(throws: PipelineFile.Problem(line: 2, message: "${TOKEN} is not set in the environment")) {
            try PipelineFile.parse("\ntail a -H 'X: 1' -H \"Y: ${TOKEN}\" http://h", environment: [:])
        }
        #expect(throws: PipelineFile.Problem(line: 1, message: "'cat' is not tail, heartbeat or journal (stdin has no place in a pipelines file)")) {
            try PipelineFile.parse("cat x", environment: [:])
        }
        #expect(throws: PipelineFile.Problem(line: 1, message: "--metrics has no place on a pipeline (--metrics goes on the run command line)")) {
            try PipelineFile.parse("tail a --metrics 0 http://h", environment: [:])
        }
        #expect(throws: PipelineFile.Problem(line: 2, message: "the name 'x' is taken by line 1 (--name)")) {
            try PipelineFile.parse("tail --name x a\ntail --name x b", environment: [:])
        }
        #expect(throws: PipelineFile.Problem(line: 2, message: "/s is line 1's too: each pipeline needs its own state and spool")) {
            try PipelineFile.parse("tail --state /s a\ntail --state /s b", environment: [:])
        }
    }

    /// The example pipelines file of Examples/Deploy (what the unit and the DaemonSet run)
    /// parses as it is, its secret from the environment.
    @Test func theExamplePipelinesFileParses() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Examples/Deploy/pipelines.conf").path
        let file = try PipelineFile.parse(try String(contentsOfFile: path, encoding: .utf8), environment: ["LOKI_TOKEN": "t"])
        #expect(file.pipelines.map(\.name) == ["app", "journal", "beat"])
    }

    /// The DaemonSet's pipelines file (its ConfigMap's `pipelines.conf` block) parses too.
    @Test func theDaemonSetPipelinesFileParses() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Examples/Deploy/daemonset.yaml").path
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0.hasSuffix("pipelines.conf: |") })
        let block = lines[(start + 1)...].prefix { $0.hasPrefix("    ") }.map { String($0.dropFirst(4)) }.joined(separator: "\n")
        let file = try PipelineFile.parse(block, environment: ["LOKI_TOKEN": "t"])
        #expect(file.pipelines.map(\.words.first) == ["tail"])
        #expect(file.pipelines.first?.words.contains("--parse") == true)
    }

    /// Every record the sink merged, by the stream (one per pipeline run) it came in.
    private static func streams(_ directory: URL) -> [String] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasPrefix("stream-") }
        return names.compactMap { try? String(contentsOfFile: directory.appendingPathComponent($0).path, encoding: .utf8) }.sorted()
    }

    /// SIGHUP: an unchanged pipeline goes on in the same stream (nothing lost or sent twice),
    /// a removed one stops, a new one starts; a file that does not parse is refused with its
    /// line while the pipelines go on; a pipeline that fails leaves the others running;
    /// SIGTERM ends all with status 0 when all delivered.
    @Test func reloadKeepsUnchangedPipelinesAndRefusesABrokenFile() async throws {
        let scratch = try TemporaryDirectory()
        let (a, b, c) = (scratch.file("a.log"), scratch.file("b.log"), scratch.file("c.log"))
        for (path, line) in [(a, "a1\n"), (b, "b1\n"), (c, "c1\n")] { try line.write(toFile: path, atomically: false, encoding: .utf8) }
        let file = scratch.file("pipelines.conf")
        try await withSink { sink, stored in
            let url = sink.url.absoluteString
            func line(_ name: String, _ path: String) -> String { "tail --name \(name) --from-start --segment-seconds 100ms \(path) \(url)\n" }
            // One pipeline cannot start: its state file's directory does not exist.
            let failing = "tail --name broken --state \(scratch.file("missing/state")) \(a) \(url)\n"
            try (line("a", a) + line("b", b) + failing).write(toFile: file, atomically: true, encoding: .utf8)
            let child = try StreamupProcess(["run", file])
            #expect(await eventually { Self.streams(stored) == ["a1\n", "b1\n"] }, "stderr: \(child.stderr)")
            #expect(child.stderr.contains("broken: tail: the directory of the state file"), "stderr: \(child.stderr)")
            // Given b removed and c added...
            try (line("a", a) + line("c", c)).write(toFile: file, atomically: true, encoding: .utf8)
            child.signal(SIGHUP)
            #expect(await eventually { Self.streams(stored).contains("c1\n") }, "stderr: \(child.stderr)")
            try append("a2\n", to: a)
            try append("b2\n", to: b)
            // ...a goes on in its stream, b sends no more, c runs.
            #expect(await eventually { Self.streams(stored).contains("a1\na2\n") }, "stderr: \(child.stderr)")
            // A file that does not parse changes nothing.
            try (line("a", a) + "tail --name d ${STREAMUP_TEST_UNSET} \(url)\n").write(toFile: file, atomically: true, encoding: .utf8)
            child.signal(SIGHUP)
            #expect(await eventually { child.stderr.contains("reload refused, the pipelines running go on") })
            #expect(child.stderr.contains("line 2: ${STREAMUP_TEST_UNSET} is not set in the environment"), "stderr: \(child.stderr)")
            try append("a3\n", to: a)
            try append("c2\n", to: c)
            #expect(await eventually { Self.streams(stored) == ["a1\na2\na3\n", "b1\n", "c1\nc2\n"] }, "\(Self.streams(stored))")
            child.signal(SIGTERM)
            let status = await child.waitForExit()
            // (The pipeline that could not start makes the status 1.)
            #expect(status == 1, "stderr: \(child.stderr)")
            #expect(Self.streams(stored) == ["a1\na2\na3\n", "b1\n", "c1\nc2\n"])
        }
    }

    /// A pipeline with a spool that a reload removed, once it has ended, can be added back by
    /// the next reload: its spool and state file are free again in the same process, and it
    /// sends what its file got meanwhile (the ended pipeline used to keep its spool locked
    /// until the process ended: "spool … is in use by another streamup process", exit 74).
    @Test func aRemovedPipelineWithASpoolCanBeAddedBack() async throws {
        let scratch = try TemporaryDirectory()
        let (a, c) = (scratch.file("a.log"), scratch.file("c.log"))
        for (path, line) in [(a, "a1\n"), (c, "c1\n")] { try line.write(toFile: path, atomically: false, encoding: .utf8) }
        let file = scratch.file("pipelines.conf")
        try await withSink { sink, stored in
            let url = sink.url.absoluteString
            let spooled =
                "tail --name a --from-start --segment-seconds 100ms --state \(scratch.file("a.state")) --spool \(scratch.file("spool")) \(a) \(url)\n"
            let other = "tail --name c --from-start --segment-seconds 100ms \(c) \(url)\n"
            try (spooled + other).write(toFile: file, atomically: true, encoding: .utf8)
            let child = try StreamupProcess(["run", "--metrics", "0", file])
            do {
                let metrics = try #require(await MetricsCommandTests.metricsURL(of: child), "stderr: \(child.stderr)")
                let port = UInt16(metrics.port ?? 0)
                #expect(await eventually { Self.streams(stored) == ["a1\n", "c1\n"] }, "stderr: \(child.stderr)")
                // Given a removed, and ended (its series gone from the scrape)...
                try other.write(toFile: file, atomically: true, encoding: .utf8)
                child.signal(SIGHUP)
                let ended = await MetricsCommandTests.scraped {
                    guard let (status, body) = LoopbackGet.fetch(port: port, "/metrics"), status == 200 else { return false }
                    let text = String(decoding: body, as: UTF8.self)
                    return !text.contains("pipeline=\"a\"") && text.contains("pipeline=\"c\"")
                }
                #expect(ended, "stderr: \(child.stderr)")
                try append("a2\n", to: a)
                // ...and added back: it runs and sends the line its file got meanwhile.
                try (spooled + other).write(toFile: file, atomically: true, encoding: .utf8)
                child.signal(SIGHUP)
                #expect(await eventually { Self.streams(stored).contains("a2\n") }, "stderr: \(child.stderr)")
                #expect(!child.stderr.contains("in use"), "stderr: \(child.stderr)")
                child.signal(SIGTERM)
                #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
                #expect(Self.streams(stored) == ["a1\n", "a2\n", "c1\n"], "\(Self.streams(stored))")
            } catch {
                child.signal(SIGKILL)
                _ = await child.waitForExit()
                throw error
            }
        }
    }
}
