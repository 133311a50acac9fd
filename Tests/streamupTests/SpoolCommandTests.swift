import Foundation
import StreamUp
import StreamUpSink
import StreamUpTestSupport
import Testing

/// Bounded memory and the disk spool (`--buffer-size`, `--spool`): the built binary against a
/// sink that stalls or is not there, and a streamup killed outright.
@Suite(.timeLimit(.minutes(2))) struct SpoolCommandTests {
    /// A stalled sink with a 1 MiB buffer: the producer is paused instead of buffering,
    /// the client's peak RSS stays far below the 96 MiB that passed through, nothing is dropped.
    @Test(.enabled(if: Sanitizer.isOff, Comment(rawValue: Sanitizer.rssSkipReason)))
    func stalledSinkPausesTheProducerAndMemoryStaysFlat() async throws {
        let input = try await randomFile(bytes: 96 << 20)
        defer { try? FileManager.default.removeItem(atPath: input.path) }
        try await withSink(configure: { $0.faults = SinkFaults(stallAfterBytes: 100_000) }) { sink, directory in
            let child = try StreamupProcess(
                [
                    "-v", "--retries", "5", "--buffer-size", "1MiB", "--segment-bytes", "512k", "--records", "none",
                    "--response-timeout", "2s", sink.url.absoluteString,
                ], stdinFile: input.path)
            let peak = PeakMemory(pid: child.process.processIdentifier)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let peakKiB = peak.stop()
            #expect(try await sha256sum(try #require(streamFile(in: directory))) == input.sha256)
            let summary = try #require(child.stderr.split(separator: "\n").last { $0.contains("server answered 200") })
            #expect(summary.contains("paused"), "the producer was never paused: \(summary)")
            #expect(peakKiB > 0 && peakKiB < 64 << 10, "peak RSS \(peakKiB) KiB for a 96 MiB stream")
        }
    }

    /// A spool that cannot be used (its path is a file) stops streamup before it reads
    /// anything: one line naming the path, exit 74 (a file streamup needs failed), not 2 ("no
    /// answer") as it was.
    @Test func anUnusableSpoolIsAFileFailure() async throws {
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        let file = work.appendingPathComponent("not-a-directory")
        try Data("x".utf8).write(to: file)
        try await withSink { sink, directory in
            let child = try StreamupProcess(["--spool", file.path, sink.url.absoluteString])
            child.write("a line\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 74, "stderr: \(child.stderr)")
            #expect(child.stderr.split(separator: "\n").count == 1 && child.stderr.contains(file.path), "stderr: \(child.stderr)")
            #expect(sink.requests.isEmpty)
        }
    }

    /// With `--spool`, a stalled sink leaves the bytes on disk (not in memory); once the sink
    /// recovers (restarted on the same port) they are delivered and the spool is emptied.
    @Test func spoolHoldsBytesOnDiskUntilDeliveredThenEmpties() async throws {
        let input = try await randomFile(bytes: 16 << 20)
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        defer { try? FileManager.default.removeItem(atPath: input.path) }
        let spool = work.appendingPathComponent("spool")
        let stored = work.appendingPathComponent("sink")
        try FileManager.default.createDirectory(at: stored, withIntermediateDirectories: true)
        var configuration = SinkConfiguration(outputDirectory: stored.path)
        configuration.faults = SinkFaults(stallAfterBytes: 100_000)
        let stalled = try SinkServer(configuration: configuration)
        stalled.start()
        let child = try StreamupProcess(
            [
                "--retries", "5", "--spool", spool.path, "--spool-size", "64MiB", "--segment-bytes", "512k",
                stalled.url.absoluteString,
            ], stdinFile: input.path)
        // While the first request is stalled, all of stdin goes to disk.
        #expect(await eventually { spooledBytes(spool) == 16 << 20 }, "spooled \(spooledBytes(spool))")
        stalled.stop()
        let recovered = try startedSink(port: stalled.port, storingIn: stored)
        defer { recovered.stop() }
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        #expect(try await sha256sum(try #require(streamFile(in: stored))) == input.sha256)
        #expect(spooledBytes(spool) == 0)
    }

    /// When retries run out, streamup says where the unacknowledged bytes are, and the next
    /// start with the same spool delivers them.
    @Test func givingUpLeavesTheBytesInTheSpoolAndSaysSo() async throws {
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        let spool = work.appendingPathComponent("spool").path
        try await withSink { sink, directory in
            sink.stop()
            let first = try StreamupProcess(["--retries", "0", "--spool", spool, sink.url.absoluteString])
            first.write("kept for later\n")
            first.closeStdin()
            #expect(await first.waitForExit() == 2)
            #expect(first.stderr.contains("15 bytes the server did not acknowledge are kept in \(spool)"), "stderr: \(first.stderr)")
            // A sink on a port of its own: the stopped one's port may be another test's by now.
            let restarted = try startedSink(port: 0, storingIn: directory)
            defer { restarted.stop() }
            let second = try StreamupProcess(["--spool", spool, restarted.url.absoluteString])
            second.closeStdin()
            #expect(await second.waitForExit() == 0, "stderr: \(second.stderr)")
            #expect(streamText(in: directory) == "kept for later\n")
        }
    }

    /// A run stopped (SIGTERM, server down) after the spool took part of a line: the stop drops
    /// the fragment with a line saying how many bytes, the stop line counts the whole lines as
    /// kept, the next start sends exactly those and new input starts a record of its own (it was
    /// glued onto the fragment: `one\ntwo\nfragmNEXT-1\n`).
    @Test func aRecordTornByAStopIsDroppedNotGluedOntoTheNextInput() async throws {
        let scratch = try TemporaryDirectory()
        let spool = scratch.file("spool")
        try await withSink { sink, directory in
            let down = try startedSink(port: 0, storingIn: directory)
            let url = down.url.absoluteString
            down.stop()
            let first = try StreamupProcess(["--spool", spool, "--retries", "forever", "--shutdown-timeout", "1s", url])
            defer { if !first.hasExited { first.signal(SIGKILL) } }
            first.write("one\ntwo\nfragm")
            #expect(await eventually { spooledBytes(URL(fileURLWithPath: spool)) == 13 }, "stderr: \(first.stderr)")
            first.signal(SIGTERM)
            #expect(await first.waitForExit() == 2, "stderr: \(first.stderr)")
            #expect(first.stderr.contains("8 bytes the server did not acknowledge are kept in \(spool)"), "stderr: \(first.stderr)")
            #expect(first.stderr.contains("stopping: dropped the last 5 bytes read"), "stderr: \(first.stderr)")

            let second = try StreamupProcess(["--spool", spool, sink.url.absoluteString])
            defer { if !second.hasExited { second.signal(SIGKILL) } }
            second.write("NEXT-1\n")
            second.closeStdin()
            #expect(await second.waitForExit() == 0, "stderr: \(second.stderr)")
            #expect(streamText(in: directory) == "one\ntwo\nNEXT-1\n")
        }
    }

    /// SIGTERM while the server is up and the input stopped in the middle of a line: the whole
    /// lines are delivered, the fragment is dropped with a line saying how many bytes (it went
    /// out as a record of its own: `fragm`, half a line a strict receiver refuses).
    @Test func aStopNeverSendsHalfALine() async throws {
        try await withSink { sink, directory in
            let child = try StreamupProcess(["--segment-seconds", "100ms", sink.url.absoluteString])
            defer { if !child.hasExited { child.signal(SIGKILL) } }
            child.write("one\ntwo\nfragm")
            #expect(await eventually { streamText(in: directory) == "one\ntwo\n" }, "stderr: \(child.stderr)")
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(streamText(in: directory) == "one\ntwo\n")
            #expect(child.stderr.contains("stopping: dropped the last 5 bytes read"), "stderr: \(child.stderr)")
        }
    }

    /// A run killed outright after the spool took part of a line: a restart with no input sends
    /// the whole lines and no fragment (it sent `fragm` as a request of its own), and a later one
    /// starts its input on a record of its own.
    @Test func aRecordTornByAKillIsNeverSent() async throws {
        let scratch = try TemporaryDirectory()
        let spool = scratch.file("spool")
        try await withSink { sink, directory in
            let first = try StreamupProcess(["--spool", spool, "--retries", "forever", "http://127.0.0.1:1/ingest"])
            defer { if !first.hasExited { first.signal(SIGKILL) } }
            first.write("one\ntwo\nfragm")
            #expect(await eventually { spooledBytes(URL(fileURLWithPath: spool)) == 13 }, "stderr: \(first.stderr)")
            first.signal(SIGKILL)
            _ = await first.waitForExit()

            let empty = try StreamupProcess(["--spool", spool, sink.url.absoluteString], stdinFile: "/dev/null")
            defer { if !empty.hasExited { empty.signal(SIGKILL) } }
            #expect(await empty.waitForExit() == 0, "stderr: \(empty.stderr)")
            #expect(streamText(in: directory) == "one\ntwo\n")
            #expect(empty.stderr.contains("dropped its last 5 bytes"), "stderr: \(empty.stderr)")

            // Everything was delivered: the next input is a new stream.
            let next = try StreamupProcess(["--spool", spool, sink.url.absoluteString])
            defer { if !next.hasExited { next.signal(SIGKILL) } }
            next.write("NEW-A\n")
            next.closeStdin()
            #expect(await next.waitForExit() == 0, "stderr: \(next.stderr)")
            let streams = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".body") }
            let texts = Set(streams.compactMap { try? String(contentsOfFile: directory.appendingPathComponent($0).path, encoding: .utf8) })
            #expect(texts == ["one\ntwo\n", "NEW-A\n"])
        }
    }

    /// A last line without `\n` at the input's end is a whole record: a run that could not
    /// deliver it keeps it, and the next start sends it.
    @Test func aLastLineWithoutNewlineAtTheInputsEndIsKept() async throws {
        let scratch = try TemporaryDirectory()
        let spool = scratch.file("spool")
        try await withSink { sink, directory in
            let input = scratch.file("input")
            try Data("one\nlast".utf8).write(to: URL(fileURLWithPath: input))
            let first = try StreamupProcess(
                ["--spool", spool, "--retries", "forever", "--shutdown-timeout", "1s", "http://127.0.0.1:1/ingest"], stdinFile: input)
            defer { if !first.hasExited { first.signal(SIGKILL) } }
            // The spool notes where the input ended.
            let record = spool + "/stream.json"
            #expect(await eventually { (try? String(contentsOfFile: record, encoding: .utf8))?.contains("\"inputEnd\":8") == true })
            first.signal(SIGTERM)
            #expect(await first.waitForExit() == 2, "stderr: \(first.stderr)")
            #expect(first.stderr.contains("8 bytes the server did not acknowledge are kept"), "stderr: \(first.stderr)")
            let second = try StreamupProcess(["--spool", spool, sink.url.absoluteString], stdinFile: "/dev/null")
            defer { if !second.hasExited { second.signal(SIGKILL) } }
            #expect(await second.waitForExit() == 0, "stderr: \(second.stderr)")
            #expect(streamText(in: directory) == "one\nlast")
        }
    }

    /// A spool write that fails part way (a full file system; here a file size limit, which
    /// fails the same way without a file system of its own): the stop line's count of kept
    /// bytes is what the next start delivers, whole lines only. The half-written piece stayed
    /// in the data file, the count was off, and the next start sent half a line.
    @Test func aFailedSpoolWriteKeepsWhatTheStopLineCounts() async throws {
        let scratch = try TemporaryDirectory()
        let spool = scratch.file("spool")
        let input = scratch.file("input")
        try (1...100_000).map { "line-\(String(format: "%08d", $0))\n" }.joined().write(toFile: input, atomically: false, encoding: .utf8)
        // 1000 blocks of 512 bytes: the first spool file (1 MiB at most) cannot grow past 512,000 bytes.
        let first = try StreamupProcess(
            executable: URL(fileURLWithPath: "/bin/sh"),
            [
                "-c", "trap '' XFSZ; ulimit -f 1000; exec \"$0\" \"$@\"", StreamupProcess.executable.path, "--spool", spool, "--spool-size", "4m",
                "--retries", "0", "http://127.0.0.1:1/ingest",
            ], stdinFile: input)
        defer { if !first.hasExited { first.signal(SIGKILL) } }
        #expect(await first.waitForExit() == 74, "stderr: \(first.stderr)")
        let line = try #require(first.stderr.split(separator: "\n").first { $0.contains("spool write") }, "stderr: \(first.stderr)")
        #expect(line.contains("read from the input were not kept"), "\(line)")
        let kept = try #require(line.firstMatch(of: /; (\d+) bytes the server did not acknowledge are kept/).flatMap { Int($0.1) }, "\(line)")
        try await withSink { sink, directory in
            let second = try StreamupProcess(["--spool", spool, sink.url.absoluteString], stdinFile: "/dev/null")
            defer { if !second.hasExited { second.signal(SIGKILL) } }
            #expect(await second.waitForExit() == 0, "stderr: \(second.stderr)")
            let stored = try #require(streamText(in: directory))
            #expect(stored.utf8.count == kept, "the stop line said \(kept) bytes were kept; \(stored.utf8.count) were delivered")
            #expect(stored.hasSuffix("\n") && stored.split(separator: "\n").allSatisfy { $0.count == 13 })
        }
    }

    /// The spool directory deleted while streamup runs (server down): one line says so and
    /// what is held stays in the process; once a directory is back at the path, everything held
    /// is written into it, and a restart delivers every line (it went on writing into deleted
    /// files without a word, and a restart found nothing).
    @Test func aSpoolDeletedWhileRunningIsSaidOnceAndWrittenAgainWhenBack() async throws {
        let scratch = try TemporaryDirectory()
        let spool = scratch.file("spool")
        let first = try StreamupProcess(["--spool", spool, "--retries", "forever", "http://127.0.0.1:1/ingest"])
        defer { if !first.hasExited { first.signal(SIGKILL) } }
        first.write("before\n")
        #expect(await eventually { spooledBytes(URL(fileURLWithPath: spool)) == 7 }, "stderr: \(first.stderr)")
        try FileManager.default.removeItem(atPath: spool)
        first.write("gone\n")
        #expect(await eventually { first.stderr.contains("was deleted while running") }, "stderr: \(first.stderr)")
        first.write("still gone\n")
        try FileManager.default.createDirectory(atPath: spool, withIntermediateDirectories: false)
        first.write("back\n")
        #expect(await eventually { spooledBytes(URL(fileURLWithPath: spool)) == 28 }, "stderr: \(first.stderr)")
        #expect(first.stderr.components(separatedBy: "was deleted while running").count == 2, "stderr: \(first.stderr)")
        #expect(first.stderr.contains("is back"), "stderr: \(first.stderr)")
        first.signal(SIGKILL)
        _ = await first.waitForExit()
        try await withSink { sink, directory in
            let second = try StreamupProcess(["--spool", spool, sink.url.absoluteString], stdinFile: "/dev/null")
            defer { if !second.hasExited { second.signal(SIGKILL) } }
            #expect(await second.waitForExit() == 0, "stderr: \(second.stderr)")
            #expect(streamText(in: directory) == "before\ngone\nstill gone\nback\n")
        }
    }

    /// A run that ends while its spool directory is gone ends with exit 74 and says so (it
    /// ended 0: nothing of the stream was on disk any more).
    @Test func aRunEndingWhileItsSpoolIsGoneExits74() async throws {
        let scratch = try TemporaryDirectory()
        let spool = scratch.file("spool")
        try await withSink { sink, directory in
            let child = try StreamupProcess(["--spool", spool, sink.url.absoluteString])
            defer { if !child.hasExited { child.signal(SIGKILL) } }
            child.write("one\n")
            #expect(await eventually { streamText(in: directory) == "one\n" }, "stderr: \(child.stderr)")
            try FileManager.default.removeItem(atPath: spool)
            child.write("two\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 74, "stderr: \(child.stderr)")
            #expect(child.stderr.contains("was deleted while running and is not back"), "stderr: \(child.stderr)")
        }
    }

    /// Under `umask 000`, what streamup keeps is its owner's only: the spool, dead-letter and
    /// state files 0600, their directories 0700; and a dead letter names the URL the way `-v`
    /// does, without the password or the credential query values (it stored them, in a 0644
    /// file).
    @Test func keptFilesArePrivateAndDeadLettersHoldNoSecrets() async throws {
        let scratch = try TemporaryDirectory()
        let log = scratch.file("app.log")
        try "a\nb\n".write(toFile: log, atomically: false, encoding: .utf8)
        let (spool, dead, state) = (scratch.file("spool"), scratch.file("dead"), scratch.file("app.state"))
        let url = "http://alice:hunter2@127.0.0.1:1/ingest?token=SECRET1&api_key=SECRET2&sig=SECRET3&keep=yes"
        let child = try StreamupProcess(
            executable: URL(fileURLWithPath: "/bin/sh"),
            [
                "-c", "umask 000; exec \"$0\" \"$@\"", StreamupProcess.executable.path, "tail", "--from-start", "--state", state, "--spool", spool,
                "--dead-letter", dead, "--retries", "0", log, url,
            ])
        defer { if !child.hasExited { child.signal(SIGKILL) } }
        let record = await poll { () -> String? in
            let names = (try? FileManager.default.contentsOfDirectory(atPath: dead)) ?? []
            return names.first { $0.hasSuffix(".json") }.map { dead + "/" + $0 }
        }
        #expect(await eventually { FileManager.default.fileExists(atPath: state) }, "stderr: \(child.stderr)")
        child.signal(SIGTERM)
        _ = await child.waitForExit()
        let recordPath = try #require(record, "stderr: \(child.stderr)")
        let text = try String(contentsOfFile: recordPath, encoding: .utf8)
        #expect(!text.contains("hunter2") && !text.contains("SECRET"), "\(text)")
        #expect(text.contains("<redacted>@127.0.0.1:1") && text.contains("keep=yes"), "\(text)")
        func mode(_ path: String) -> Int {
            ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? NSNumber)?.intValue ?? -1
        }
        for directory in [spool, dead] {
            #expect(mode(directory) == 0o700, "\(directory): \(String(mode(directory), radix: 8))")
            for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
                #expect(mode(directory + "/" + name) == 0o600, "\(name): \(String(mode(directory + "/" + name), radix: 8))")
            }
        }
        #expect(mode(state) == 0o600, "state: \(String(mode(state), radix: 8))")
    }

    /// `tail --state --spool` killed with SIGKILL while the server is down, lines appended
    /// meanwhile, then restarted once the server is up: the stored stream is the whole log,
    /// every line once, even where the spool held more than the saved position said.
    @Test func sigkillWithSpoolAndStateLosesNothing() async throws {
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        let log = work.appendingPathComponent("app.log").path
        let state = work.appendingPathComponent("app.state").path
        let spool = work.appendingPathComponent("spool").path
        var expected = (0..<2_000).map { "line \($0) before the kill\n" }.joined()
        try expected.write(toFile: log, atomically: false, encoding: .utf8)
        let stored = work.appendingPathComponent("sink")
        try FileManager.default.createDirectory(at: stored, withIntermediateDirectories: true)
        // A port nobody listens on yet.
        let probe = try SinkServer(configuration: SinkConfiguration(outputDirectory: stored.path))
        probe.start()
        let port = probe.port
        let url = probe.url.absoluteString
        probe.stop()

        let arguments = [
            "tail", "--from-start", "--state", state, "--spool", spool, "--retries", "forever",
            "--segment-seconds", "200ms", log, url,
        ]
        let first = try StreamupProcess(arguments)
        // Given every line safe in the spool and the position saved...
        let size = expected.utf8.count
        #expect(await eventually { spooledBytes(URL(fileURLWithPath: spool)) == size })
        #expect(await eventually { (try? SourceState.load(from: state))??.sources.last?.offset == Int64(size) })
        // ...when streamup is killed outright just after the spool took bytes the saved
        // position does not cover yet (a crash between the two: the position is set back by
        // 1,000 bytes, mid-line), and more lines come while it is down,
        first.signal(SIGKILL)
        _ = await first.waitForExit()
        var lagging = try #require(try SourceState.load(from: state))
        #expect(lagging.streamOffset == size && lagging.sources.count == 1)
        lagging.sources[0].offset -= 1_000
        lagging.streamOffset = size - 1_000
        try lagging.save(to: state)
        let more = (0..<500).map { "line \($0) after the kill\n" }.joined()
        try append(more, to: log)
        expected += more
        // then, with the server up, a restart sends the spool first and then the new lines.
        let sink = try startedSink(port: port, storingIn: stored)
        defer { sink.stop() }
        let second = try StreamupProcess(arguments)
        #expect(await eventually { streamText(in: stored) == expected }, "stored \(streamText(in: stored)?.utf8.count ?? 0) of \(expected.utf8.count) bytes")
        second.signal(SIGTERM)
        #expect(await second.waitForExit() == 0, "stderr: \(second.stderr)")
        #expect(streamText(in: stored) == expected)
    }
}

/// Bytes in a spool's `*.spool` files.
private func spooledBytes(_ spool: URL) -> Int {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: spool.path)) ?? []
    return names.filter { $0.hasSuffix(".spool") }.reduce(0) { total, name in
        let attributes = try? FileManager.default.attributesOfItem(atPath: spool.appendingPathComponent(name).path)
        return total + ((attributes?[.size] as? NSNumber)?.intValue ?? 0)
    }
}

/// The peak resident set (`VmHWM`) of a running process, sampled every 20 ms until `stop()`;
/// the last sample before the process exits is its peak.
private final class PeakMemory: @unchecked Sendable {
    private let lock = NSLock()
    private var peakKiB = 0
    private var running = true
    private let thread: Thread

    init(pid: Int32) {
        let box = Box()
        thread = Thread {
            while box.owner?.isRunning ?? false {
                if let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                    let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
                    let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
                {
                    box.owner?.record(kib)
                }
                usleep(20_000)
            }
        }
        box.owner = self
        thread.start()
    }

    private var isRunning: Bool { lock.withLock { running } }
    private func record(_ kib: Int) { lock.withLock { peakKiB = max(peakKiB, kib) } }

    /// Stops sampling; returns the peak in KiB (0 if never sampled).
    func stop() -> Int {
        lock.withLock {
            running = false
            return peakKiB
        }
    }

    private final class Box: @unchecked Sendable { weak var owner: PeakMemory? }
}
