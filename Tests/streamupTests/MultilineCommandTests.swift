import Foundation
import StreamUp
import StreamUpTestSupport
import Testing

/// `--multiline` as users run it: the built binary, from stdin and from `tail`, into a
/// receiver validator, checking what it stored: a stack trace arrives as one record.
@Suite(.timeLimit(.minutes(2))) struct MultilineCommandTests {
    /// A log line, a Java exception with `frames` frames and a cause, as logback writes them.
    static func javaTrace(_ tag: String, frames: Int = 200) -> [String] {
        var lines = ["2026-11-25 10:00:00 ERROR \(tag) failed", "java.lang.IllegalStateException: \(tag)"]
        for frame in 0..<frames { lines.append("\tat com.example.Service.call\(frame)(Service.java:\(frame + 1))") }
        return lines + ["Caused by: java.io.IOException: disk full", "\tat com.example.Disk.write(Disk.java:7)", "\t... 12 more"]
    }

    static func text(_ lines: [String]) -> String { lines.map { $0 + "\n" }.joined() }

    /// Waits until the validator holds `count` records (or a problem), on a thread of its own.
    static func waitForRecords(_ validator: ReceiverValidator, _ count: Int) async -> Bool {
        await onOwnThread {
            poll(within: .seconds(30)) { () -> Bool? in
                guard let held = validator.count() else { return nil }
                if held.problems > 0 { return false }
                return held.records >= count ? true : nil
            } ?? false
        }
    }

    /// stdin into Loki: a 200-frame Java trace between two log lines arrives as one entry
    /// whose line holds the trace's newlines; nothing is refused.
    @Test func javaTraceFromStdinIsOneLokiEntry() async throws {
        let trace = Self.javaTrace("stdin")
        try await ReceiverValidator.with("loki") { validator in
            let child = try StreamupProcess(["--to", "loki", "--multiline", "java", validator.url.absoluteString])
            child.write(Self.text(["2026-11-25 09:59:59 INFO started"] + trace + ["2026-11-25 10:00:01 INFO done"]))
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let stored = try await validator.snapshot()
            #expect(stored.errors.isEmpty, "\(stored.errors)")
            #expect(stored.text == ["2026-11-25 09:59:59 INFO started", trace.joined(separator: "\n"), "2026-11-25 10:00:01 INFO done"])
        }
    }

    /// stdin left open: the trace, last before a quiet spell, goes out after
    /// --multiline-timeout, before the input ends.
    @Test func quietStdinSendsTheHeldTraceAfterTheTimeout() async throws {
        let trace = Self.javaTrace("quiet", frames: 5)
        try await ReceiverValidator.with("loki") { validator in
            let child = try StreamupProcess([
                "--to", "loki", "--multiline", "java", "--multiline-timeout", "200ms", "--segment-seconds", "100ms", validator.url.absoluteString,
            ])
            child.write(Self.text(["2026-11-25 09:59:59 INFO started"] + trace))
            #expect(await Self.waitForRecords(validator, 2), "stderr: \(child.stderr)")
            let stored = try await validator.snapshot()
            #expect(stored.text == ["2026-11-25 09:59:59 INFO started", trace.joined(separator: "\n")])
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        }
    }

    /// tail into Elasticsearch: the trace in a followed file is one document; the last line,
    /// with nothing after it, goes out after --multiline-timeout.
    @Test func javaTraceFromTailIsOneDocument() async throws {
        let scratch = try TemporaryDirectory()
        let log = scratch.url.appendingPathComponent("app.log").path
        let trace = Self.javaTrace("tail")
        try Self.text(["2026-11-25 09:59:59 INFO started"] + trace).write(toFile: log, atomically: false, encoding: .utf8)
        try await ReceiverValidator.with("elasticsearch") { validator in
            let child = try StreamupProcess([
                "tail", "--from-start", "--to", "elasticsearch", "--multiline", "java", "--multiline-timeout", "200ms", log,
                validator.url.absoluteString + "/logs-app-default",
            ])
            #expect(await Self.waitForRecords(validator, 2), "stderr: \(child.stderr)")
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let stored = try await validator.snapshot()
            #expect(stored.errors.isEmpty, "\(stored.errors)")
            #expect(stored.text == ["2026-11-25 09:59:59 INFO started", trace.joined(separator: "\n")])
        }
    }

    /// Exactly once with a record half written: streamup killed (SIGKILL) while the first
    /// half of a trace is held; the state file stays before the trace; after the restart the
    /// whole trace arrives once, as one record, and the line before it is not sent again.
    @Test func restartInTheMiddleOfATraceSendsItOnceWhole() async throws {
        let scratch = try TemporaryDirectory()
        let log = scratch.url.appendingPathComponent("app.log").path
        let state = scratch.url.appendingPathComponent("app.state").path
        let trace = Self.javaTrace("restart")
        let before = "2026-11-25 09:59:59 INFO started"
        try Self.text([before] + trace.prefix(100)).write(toFile: log, atomically: false, encoding: .utf8)
        try await ReceiverValidator.with("loki") { validator in
            let arguments = [
                "tail", "--from-start", "--state", state, "--segment-seconds", "100ms", "--to", "loki", "--multiline", "java",
                "--multiline-timeout", "60s", log, validator.url.absoluteString,
            ]
            let first = try StreamupProcess(arguments)
            // The trace's first line ended the record before it: that one is delivered, and
            // the saved position is just after it, not in the held half of the trace.
            #expect(await Self.waitForRecords(validator, 1), "stderr: \(first.stderr)")
            let savedOffset = Int64(before.utf8.count + 1)
            #expect(await eventually { (try? SourceState.load(from: state))??.sources.last?.offset == savedOffset })
            first.signal(SIGKILL)
            _ = await first.waitForExit()
            #expect((try SourceState.load(from: state))?.sources.last?.offset == savedOffset)
            try append(Self.text(Array(trace.dropFirst(100)) + ["2026-11-25 10:00:01 INFO next"]), to: log, creating: false)
            let second = try StreamupProcess(arguments)
            #expect(await Self.waitForRecords(validator, 2), "stderr: \(second.stderr)")
            let traceEnd = savedOffset + Int64(Self.text(trace).utf8.count)
            #expect(await eventually { (try? SourceState.load(from: state))??.sources.last?.offset == traceEnd })
            second.signal(SIGTERM)
            #expect(await second.waitForExit() == 0, "stderr: \(second.stderr)")
            let stored = try await validator.snapshot()
            #expect(stored.errors.isEmpty, "\(stored.errors)")
            #expect(stored.text == [before, trace.joined(separator: "\n")])
        }
    }
}
