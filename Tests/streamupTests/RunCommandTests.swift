import Foundation
import StreamUp
import StreamUpTestSupport
import Testing

@testable import streamup

/// `streamup run FILE` as only the built binary shows it: several pipelines into the sink
/// through reloads (a pipeline removed and put back while its receiver is down), a pipeline
/// that fails beside healthy ones, a file that cannot be read, `--check`, and the open-files
/// limit. The supervision itself is tested on the manual clock (``RunSupervisionTests``), the
/// file's words without a process (``PipelineFileTests``).
@Suite(.timeLimit(.minutes(2))) struct RunCommandTests {
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

    /// The lines of every stream the sink merged, each line once per time it arrived.
    private static func lines(_ directory: URL) -> [String] {
        streams(directory).flatMap { $0.split(separator: "\n").map(String.init) }
    }

    /// A pipeline removed by SIGHUP while its receiver is down is still stopping when a second
    /// SIGHUP puts it back: the new copy starts once the old one (aborted at its shutdown
    /// timeout) has let go of its state file, `run` stays up, and once the receiver is back all
    /// 1,000 lines are there once. The old copy says its bytes are read again, not lost.
    @Test func aPipelinePutBackWhileItsOldCopyStopsStartsOnceTheOldCopyHasLetGo() async throws {
        let scratch = try TemporaryDirectory()
        let (log, other, file) = (scratch.file("a.log"), scratch.file("b.log"), scratch.file("pipelines.conf"))
        let received = scratch.url.appendingPathComponent("received")
        try FileManager.default.createDirectory(at: received, withIntermediateDirectories: true)
        try (1...500).map { "line \($0)\n" }.joined().write(toFile: log, atomically: false, encoding: .utf8)
        let first = try startedSink(port: 0, storingIn: received)
        let url = first.url.absoluteString
        let pipeline =
            "tail --name a --from-start --segment-seconds 100ms --shutdown-timeout 3s --state \(scratch.file("a.state")) \(log) \(url)\n"
        let bystander = "tail --name b \(other) \(url)\n"
        try (pipeline + bystander).write(toFile: file, atomically: true, encoding: .utf8)
        let child = try StreamupProcess(["run", file])
        #expect(await eventually { Self.lines(received).count == 500 }, "stderr: \(child.stderr)")
        // Given the receiver down and 500 more lines read...
        first.stop()
        try append((501...1000).map { "line \($0)\n" }.joined(), to: log)
        #expect(await eventually { child.stderr.contains("a: delivery is failing") }, "stderr: \(child.stderr)")
        // ...a is removed, and put back while its old copy still waits for the receiver.
        try bystander.write(toFile: file, atomically: true, encoding: .utf8)
        child.signal(SIGHUP)
        #expect(await eventually { child.stderr.contains("reloaded: stopped a") }, "stderr: \(child.stderr)")
        try (pipeline + bystander).write(toFile: file, atomically: true, encoding: .utf8)
        child.signal(SIGHUP)
        // (Under a heavy load the old copy may be gone before the second reload: then the reload
        // starts a itself.)
        #expect(
            await eventually {
                child.stderr.contains("a: started: its earlier copy has let go") || child.stderr.contains("reloaded: started a; 1 unchanged")
            }, "stderr: \(child.stderr)")
        let second = try startedSink(port: first.port, storingIn: received)
        defer { second.stop() }
        let expected = (1...1000).map { "line \($0)" }
        #expect(await eventually { Self.lines(received).sorted() == expected.sorted() }, "stderr: \(child.stderr)")
        #expect(!child.hasExited, "stderr: \(child.stderr)")
        #expect(child.stderr.contains("reads them again from their source"), "stderr: \(child.stderr)")
        #expect(!child.stderr.contains("CancellationError") && !child.stderr.contains("lost"), "stderr: \(child.stderr)")
        child.signal(SIGTERM)
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        #expect(Self.lines(received).sorted() == expected.sorted())
    }

    /// A pipeline that cannot start (its state directory is missing), on the file's first line,
    /// beside a healthy one: the healthy one delivers, `run` stays up, `/health` answers 503
    /// naming the failed one and the scrape shows it down; stdout stays empty (no answer JSON).
    @Test func aPipelineThatFailsAtStartIsShownAndNeverTakesTheOthersDown() async throws {
        let scratch = try TemporaryDirectory()
        let (a, b, file) = (scratch.file("a.log"), scratch.file("b.log"), scratch.file("pipelines.conf"))
        try "b1\n".write(toFile: b, atomically: false, encoding: .utf8)
        try await withSink { sink, stored in
            let url = sink.url.absoluteString
            let broken = "tail --name broken --state \(scratch.file("missing/state")) \(a) \(url)\n"
            let healthy = "tail --name ok --from-start --segment-seconds 100ms \(b) \(url)\n"
            try (broken + healthy).write(toFile: file, atomically: true, encoding: .utf8)
            let child = try StreamupProcess(["run", "--metrics", "0", file])
            let metrics = try #require(await MetricsCommandTests.metricsURL(of: child), "stderr: \(child.stderr)")
            let port = UInt16(metrics.port ?? 0)
            #expect(await eventually { Self.streams(stored) == ["b1\n"] }, "stderr: \(child.stderr)")
            let health = await onOwnThread { LoopbackGet.fetch(port: port, "/health") }
            #expect(health?.status == 503, "stderr: \(child.stderr)")
            let body = String(decoding: health?.body ?? [], as: UTF8.self)
            #expect(body.contains("broken: could not start"), "\(body)")
            let scrape = await onOwnThread { LoopbackGet.fetch(port: port, "/metrics").map { String(decoding: $0.body, as: UTF8.self) } } ?? ""
            #expect(scrape.contains("streamup_pipeline_up{pipeline=\"broken\"} 0"), "\(scrape)")
            #expect(scrape.contains("streamup_pipeline_up{pipeline=\"ok\"} 1"), "\(scrape)")
            #expect(!child.hasExited, "stderr: \(child.stderr)")
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 1, "stderr: \(child.stderr)")
            #expect(child.stdout.isEmpty, "stdout: \(child.stdout)")
        }
    }

    /// A pipelines file that is not there is one line and status 64, as `--help` says; `--check`
    /// passes a good file (0) and names the line of a pipeline without a URL (64).
    @Test func aMissingFileIsOneLineAndCheckNamesTheBadLine() async throws {
        let scratch = try TemporaryDirectory()
        let missing = scratch.file("nope.conf")
        let run = try StreamupProcess(["run", missing])
        #expect(await run.waitForExit() == 64)
        #expect(run.stderr == "streamup: run: cannot read \(missing): No such file or directory\n")
        let file = scratch.file("pipelines.conf")
        try "tail --state \(scratch.file("s")) \(scratch.file("a.log")) http://127.0.0.1:9/\n".write(toFile: file, atomically: true, encoding: .utf8)
        let good = try StreamupProcess(["run", "--check", file])
        #expect(await good.waitForExit() == 0, "stderr: \(good.stderr)")
        try "# a comment\nheartbeat --every 1s\n".write(toFile: file, atomically: true, encoding: .utf8)
        let bad = try StreamupProcess(["run", "--check", file])
        #expect(await bad.waitForExit() == 64)
        #expect(bad.stderr.hasPrefix("streamup: run --check: \(file): line 2: no URL"), "stderr: \(bad.stderr)")
    }

    /// Under a small open-files limit: with a hard limit of 64, ten pipelines are refused in one
    /// line naming the limit (never a crash, never a "cannot connect" per pipeline); with 16,
    /// too few for anything, every command refuses to start (libdispatch trapped at 10); with a
    /// soft limit of 64 and a hard one of 4,096, streamup raises its own and all ten deliver.
    @Test func pipelinesThatNeedMoreFilesThanTheLimitAreRefusedInOneLine() async throws {
        let prlimit = URL(fileURLWithPath: "/usr/bin/prlimit")
        try #require(FileManager.default.isExecutableFile(atPath: prlimit.path), "util-linux's prlimit is missing")
        let scratch = try TemporaryDirectory()
        try await withSink { sink, stored in
            let file = scratch.file("pipelines.conf")
            var text = ""
            for index in 1...10 {
                let log = scratch.file("\(index).log")
                try "line \(index)\n".write(toFile: log, atomically: false, encoding: .utf8)
                text += "tail --name p\(index) --from-start --segment-seconds 100ms \(log) \(sink.url.absoluteString)\n"
            }
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            let refused = try StreamupProcess(executable: prlimit, ["--nofile=64:64", StreamupProcess.executable.path, "run", file])
            #expect(await refused.waitForExit() == 64, "stderr: \(refused.stderr)")
            #expect(refused.stderr.contains("more than this process may open (RLIMIT_NOFILE 64)"), "stderr: \(refused.stderr)")
            #expect(refused.stderr.split(separator: "\n").count == 1, "stderr: \(refused.stderr)")
            // Below a few dozen not even one pipeline's machinery starts: refused for any command.
            let tiny = try StreamupProcess(executable: prlimit, ["--nofile=16:16", StreamupProcess.executable.path, "run", file])
            #expect(await tiny.waitForExit() == 64, "stderr: \(tiny.stderr)")
            #expect(tiny.stderr.hasPrefix("streamup: this process may open only 16 files (RLIMIT_NOFILE)"), "stderr: \(tiny.stderr)")
            let raised = try StreamupProcess(executable: prlimit, ["--nofile=64:4096", StreamupProcess.executable.path, "run", file])
            #expect(await eventually { Self.streams(stored).count == 10 }, "stderr: \(raised.stderr)")
            raised.signal(SIGTERM)
            #expect(await raised.waitForExit() == 0, "stderr: \(raised.stderr)")
        }
    }
}
