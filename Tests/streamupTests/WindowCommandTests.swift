import Foundation
import StreamUp
import StreamUpSink
import StreamUpTestSupport
import Testing

/// Several requests in flight, over real sockets with the built binary: a Python receiver
/// (`Tests/Receivers/window_receiver.py`) answers each request late, on a thread of its own, and
/// keeps each body under its `Streamup-Stream-Id` and `Streamup-Offset` as the sink does. What
/// it holds is the input, each line once, whatever came back out of order, was lost, or was cut
/// by a kill.
@Suite(.timeLimit(.minutes(3))) struct WindowCommandTests {
    /// The receiver, started and read.
    struct Receiver {
        let process: StreamupProcess
        let url: URL

        init(delay: Double, dropAnswer: Int = 0, refuse: Int = 0, maxBody: Int = 0) async throws {
            process = try PythonScript.start(
                "window_receiver.py",
                ["--delay", String(delay), "--drop-answer", String(dropAnswer), "--refuse", String(refuse), "--max-body", String(maxBody)])
            let line = await process.firstLine() ?? ""
            guard let range = line.range(of: "listening on "), let url = URL(string: String(line[range.upperBound...])) else {
                process.signal(SIGKILL)
                throw TimedOut("the window receiver's address (stdout: \(line), stderr: \(process.stderr))")
            }
            self.url = url
        }

        func stop() async {
            process.signal(SIGTERM)
            if await process.waitForExit(timeout: 10) == nil { process.signal(SIGKILL) }
        }

        /// `/_window/state` as JSON (blocking: from a thread of its own).
        func stateNow() -> [String: Any] {
            let body = LoopbackGet.fetch(port: UInt16(url.port ?? 0), "/_window/state")?.body ?? []
            return (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]) ?? [:]
        }

        /// Every stream's bodies joined in offset order (blocking).
        func storedLinesNow() -> [Substring] {
            let streams = stateNow()["streams"] as? [String: Any] ?? [:]
            var text = ""
            for name in streams.keys.sorted() {
                let target = "/_window/stream?id=" + (name.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? name)
                text += String(decoding: LoopbackGet.fetch(port: UInt16(url.port ?? 0), target)?.body ?? [], as: UTF8.self)
            }
            return text.split(separator: "\n")
        }

        func state() async -> [String: Any] {
            let receiver = self
            let body = await onOwnThread { LoopbackGet.fetch(port: UInt16(receiver.url.port ?? 0), "/_window/state")?.body ?? [] }
            return (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]) ?? [:]
        }

        func storedLines() async -> [Substring] {
            let receiver = self
            return await onOwnThread { receiver.storedLinesNow() }
        }

        /// Runs streamup with `arguments` and then this receiver's URL on `input` to its end;
        /// then what the receiver holds. The receiver is stopped.
        func run(_ arguments: [String], input: String) async throws -> (status: Int32?, stderr: String, state: [String: Any], stored: [Substring]) {
            let child = try StreamupProcess(arguments + [url.absoluteString])
            child.write(input)
            child.closeStdin()
            let status = await child.waitForExit()
            let state = await state()
            let stored = await storedLines()
            await stop()
            return (status, child.stderr, state, stored)
        }

        /// Waits, on a thread of its own, until `condition` of the receiver holds.
        func eventually(within timeout: Duration, _ condition: @escaping @Sendable (Receiver) -> Bool) async -> Bool {
            let receiver = self
            return await onOwnThread { StreamUpTestSupport.eventually(within: timeout) { condition(receiver) } }
        }
    }

    static func lines(_ count: Int) -> String {
        (1...count).map { "line \($0) of the window test\n" }.joined()
    }

    /// Each line of `input` is stored exactly once.
    static func storedOnce(_ stored: [Substring], _ input: String) -> Bool {
        var counts: [Substring: Int] = [:]
        for line in stored { counts[line, default: 0] += 1 }
        let expected = input.split(separator: "\n")
        return counts.count == expected.count && expected.allSatisfy { counts[$0] == 1 }
    }

    /// A receiver that answers 200 ms late: the window grows past one request (the metrics'
    /// in-flight gauge says so while it happens, and the receiver saw several at once), and
    /// what it stored is the input, in order.
    @Test func severalSegmentsGoOutWhileEarlierOnesWaitForAnswers() async throws {
        let receiver = try await Receiver(delay: 0.2)
        let input = Self.lines(12_000)
        try await Self.runSeeingSeveralOut(["--max-in-flight", "8", "--segment-bytes", "8k"], input: input, into: receiver)
        let state = await receiver.state()
        let stored = await receiver.storedLines()
        await receiver.stop()
        #expect((state["most_at_once"] as? Int ?? 0) > 1)
        #expect((state["errors"] as? [String] ?? ["?"]).isEmpty, "\(state)")
        #expect(stored == input.split(separator: "\n"), "the stored stream is the input, in order")
    }

    /// A receiver that hangs up without an answer on every request over 10,000 bytes (as Fluent
    /// Bit's http input does once its memory limit is reached): with several segments out, they
    /// break in turn, and each one's third break in a row still makes segments smaller, so
    /// every line is stored once and streamup exits 0 (it retried the same sizes forever). They
    /// stay smaller: at most three hang-ups for each of the 8 requests out when the limit was
    /// met (growing back after successes met it again and again: 16 KiB requests every few).
    @Test func segmentsOverABodyLimitThatHangsUpGoSmallerWithSeveralOut() async throws {
        let receiver = try await Receiver(delay: 0.05, maxBody: 10_000)
        let input = Self.lines(20_000)
        let run = try await receiver.run(["--max-in-flight", "8", "--segment-bytes", "16k"], input: input)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(Self.storedOnce(run.stored, input), "\(run.state)")
        let hungUp = run.state["hung_up"] as? Int ?? 0
        #expect((3...3 * 8).contains(hungUp), "hang-ups: \(hungUp); stderr: \(run.stderr)")
        #expect(run.stderr.contains("the connection broke 3 times in a row during a request of "), "stderr: \(run.stderr)")
    }

    /// Runs streamup with `arguments` (and `--metrics`) into `receiver` on `input`: the in-flight
    /// gauge goes past one while it runs, and it exits 0. On a failure the receiver is stopped.
    static func runSeeingSeveralOut(_ arguments: [String], input: String, into receiver: Receiver) async throws {
        let child = try StreamupProcess(arguments + ["--metrics", "0", receiver.url.absoluteString])
        do {
            child.write(input)
            let metrics = try #require(await MetricsCommandTests.metricsURL(of: child), "stderr: \(child.stderr)")
            let port = UInt16(metrics.port ?? 0)
            let several = await MetricsCommandTests.scraped {
                (MetricsCommandTests.sample("streamup_requests_in_flight", port: port) ?? 0) > 1
            }
            #expect(several, "the in-flight gauge never went past 1; stderr: \(child.stderr)")
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        } catch {
            child.signal(SIGKILL)
            _ = await child.waitForExit()
            await receiver.stop()
            throw error
        }
    }

    /// A window wider than the platform's 6 connections to one host (URLSession's default on
    /// Linux, which queues the rest): a receiver that answers late has all 12 requests of a
    /// fixed window of 12 open at once, and stores the input in order.
    @Test func aWindowWiderThanSixHasAllItsRequestsOpenAtOnce() async throws {
        let receiver = try await Receiver(delay: 0.5)
        let input = Self.lines(12_000)
        var options = StreamUploader.Options()
        options.maxInFlight = 12
        options.adaptiveInFlight = false
        options.segmentBytes = 8 << 10
        let uploader = try StreamUploader(UploadConfiguration(url: receiver.url), options: options)
        let (chunks, continuation) = AsyncStream<[UInt8]>.makeStream()
        continuation.yield(Array(input.utf8))
        continuation.finish()
        let answer = try? await uploader.run(AsyncSequenceProducer(chunks))
        let state = await receiver.state()
        let stored = await receiver.storedLines()
        await receiver.stop()
        #expect(answer?.statusCode == 204)
        #expect(state["most_at_once"] as? Int == 12, "the receiver's most requests at once: \(state["most_at_once"] ?? "?")")
        #expect((state["errors"] as? [String] ?? ["?"]).isEmpty, "\(state["errors"] ?? "?")")
        #expect(stored == input.split(separator: "\n"), "the stored stream is the input, in order")
    }

    /// `streamup tail --state --spool` killed with SIGKILL while several segments are out,
    /// then started again: every line reaches the receiver exactly once.
    @Test func aKillWhileSeveralSegmentsAreOutLosesAndDoublesNothing() async throws {
        let scratch = try TemporaryDirectory()
        let file = scratch.file("app.log")
        let input = Self.lines(20_000)
        try input.write(toFile: file, atomically: true, encoding: .utf8)
        let receiver = try await Receiver(delay: 0.3)
        let arguments = [
            "tail", "--from-start", file, "--state", scratch.file("state"), "--spool", scratch.file("spool"), "--max-in-flight", "8",
            "--segment-bytes", "8k", receiver.url.absoluteString,
        ]
        let first = try StreamupProcess(arguments)
        let several = await receiver.eventually(within: .seconds(60)) { receiver in
            let state = receiver.stateNow()
            return (state["at_once"] as? Int ?? 0) > 2 && (state["requests"] as? Int ?? 0) > 6
        }
        first.signal(SIGKILL)
        _ = await first.waitForExit()
        #expect(several, "several requests were out when it was killed; stderr: \(first.stderr)")
        let second = try StreamupProcess(arguments)
        let all = await receiver.eventually(within: .seconds(90)) { $0.storedLinesNow().count >= 20_000 }
        second.signal(SIGTERM)
        _ = await second.waitForExit()
        let state = await receiver.state()
        let stored = await receiver.storedLines()
        await receiver.stop()
        #expect(all, "stderr: \(second.stderr)")
        #expect((state["errors"] as? [String] ?? ["?"]).isEmpty, "resends after the restart are identical: \(state)")
        #expect(Self.storedOnce(stored, input), "first: \(first.stderr) second: \(second.stderr)")
    }

    /// `--to victorialogs` without `--max-in-flight`: the preset's window (adapting up to 8)
    /// puts several segments out at once against a receiver that answers 100 ms late (the
    /// in-flight gauge says so while it happens, and the receiver saw several at once); every
    /// record is stored once.
    @Test func aPresetPutsSeveralRequestsOutByDefault() async throws {
        let receiver = try await Receiver(delay: 0.1)
        let input = Self.lines(3_000)
        try await Self.runSeeingSeveralOut(["--to", "victorialogs", "--segment-bytes", "8k"], input: input, into: receiver)
        let state = await receiver.state()
        let stored = await receiver.storedLines()
        await receiver.stop()
        #expect((state["most_at_once"] as? Int ?? 0) > 1, "\(state["most_at_once"] ?? "?") at once")
        #expect((state["errors"] as? [String] ?? ["?"]).isEmpty, "\(state)")
        #expect(Self.storedOnce(Self.messages(stored, key: "_msg"), input), "each record stored once")
    }

    /// At a pace one request at a time carries (5 lines every 100 ms, 1 s segments), a
    /// preset's window keeps one request out against a receiver that answers 2 s late: a
    /// second one would gain nothing and wait, spinning, for its answer (before, the next
    /// segment went out on its timer while the one before still waited). Every record arrives.
    /// Long set: `DeliveryMachineWindowTests.aSecondSegmentGoesOnlyWhenOneAtATimeCannotKeepUp`
    /// shows the window's choice on the manual clock.
    @Test(.long) func aSteadyPaceKeepsOneRequestOutAgainstASlowReceiver() async throws {
        let receiver = try await Receiver(delay: 2.0)
        let child = try StreamupProcess(["--to", "victorialogs", receiver.url.absoluteString])
        var input = ""
        for round in 0..<50 {
            let lines = (1...5).map { "paced line \(round * 5 + $0)\n" }.joined()
            child.write(lines)
            input += lines
            try await Task.sleep(for: .milliseconds(100))
        }
        // Every line stored before the input ends (whose rest would go at once).
        let all = await receiver.eventually(within: .seconds(30)) { $0.storedLinesNow().count == 250 }
        child.closeStdin()
        let status = await child.waitForExit()
        let state = await receiver.state()
        let stored = await receiver.storedLines()
        await receiver.stop()
        #expect(all && status == 0, "stderr: \(child.stderr)")
        #expect((state["most_at_once"] as? Int ?? 0) == 1, "\(state["most_at_once"] ?? "?") requests at once")
        #expect(Self.storedOnce(Self.messages(stored, key: "_msg"), input), "each record stored once")
    }

    /// Where records would arrive out of order with nothing to sort them by, the default stays
    /// one request at a time against the same slow receiver: a plain URL (a receiver that may
    /// append bodies as they come), `--to vector` (lines as they are, stamped on arrival), and a
    /// preset with `--dead-letter` or an explicit `--max-in-flight 1`. Records arrive in the
    /// order read; `--dead-letter` quietly keeps to one (only an explicit window is refused).
    @Test(arguments: [
        [], ["--to", "vector"], ["--to", "victorialogs", "--dead-letter", "DIR"], ["--to", "victorialogs", "--max-in-flight", "1"],
    ])
    func oneRequestAtATimeWhereOrderIsArrival(_ options: [String]) async throws {
        let scratch = try TemporaryDirectory()
        let receiver = try await Receiver(delay: 0.1)
        let input = Self.lines(3_000)
        let arguments = options.map { $0 == "DIR" ? scratch.file("dead") : $0 } + ["--segment-bytes", "8k"]
        let (status, stderr, state, stored) = try await receiver.run(arguments, input: input)
        #expect(status == 0, "stderr: \(stderr)")
        #expect((state["requests"] as? Int ?? 0) > 4, "several segments: \(state["requests"] ?? "?")")
        #expect(state["most_at_once"] as? Int == 1, "\(state["most_at_once"] ?? "?") at once with \(options)")
        #expect((state["errors"] as? [String] ?? ["?"]).isEmpty, "\(state)")
        if options.isEmpty || options == ["--to", "vector"] {
            #expect(stored == input.split(separator: "\n"), "the stored stream is the input, in order")
        }
    }

    /// The `key` string of each JSON record line (the message of a preset's record).
    static func messages(_ lines: [Substring], key: String) -> [Substring] {
        lines.map { line in
            let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
            return Substring(object?[key] as? String ?? "not a record: \(line)")
        }
    }

    /// A window with an option that keeps one request out is refused with one line and exit 64,
    /// not silently lowered.
    @Test func aWindowWithAnOptionThatKeepsOneOutIsAUsageError() async throws {
        for (arguments, reason) in [
            (["--dead-letter", "/tmp/dead"], "--dead-letter (offsets leave out what it sets aside, so no request may be out past one it could)"),
            (["--resumable"], "--resumable (one upload, appended in order)"),
            (["-X", "PUT"], "-X PUT (one resource, written in order)"),
        ] {
            let child = try StreamupProcess(["--max-in-flight", "4"] + arguments + ["http://127.0.0.1:9/"])
            child.closeStdin()
            #expect(await child.waitForExit() == 64)
            #expect(child.stderr == "streamup: --max-in-flight 4 cannot go with \(reason): it sends one request at a time\n")
        }
    }

    /// `--endpoints balance` spreads a window over several receivers that answer late: each
    /// gets segments, requests overlap, and together they hold every line exactly once.
    @Test func balanceSpreadsTheWindowOverTheReceivers() async throws {
        let first = try await Receiver(delay: 0.2)
        let second: Receiver
        do { second = try await Receiver(delay: 0.2) } catch {
            await first.stop()
            throw error
        }
        let input = Self.lines(12_000)
        let child = try StreamupProcess(
            ["--max-in-flight", "8", "--segment-bytes", "8k", "--endpoints", "balance", first.url.absoluteString, second.url.absoluteString])
        child.write(input)
        child.closeStdin()
        let status = await child.waitForExit()
        let states = [await first.state(), await second.state()]
        let stored = await first.storedLines() + second.storedLines()
        await first.stop()
        await second.stop()
        #expect(status == 0, "stderr: \(child.stderr)")
        #expect(states.allSatisfy { ($0["requests"] as? Int ?? 0) > 1 }, "each receiver gets segments: \(states)")
        #expect(states.map { $0["most_at_once"] as? Int ?? 0 }.reduce(0, +) > 2, "the window went past one per receiver: \(states)")
        #expect(Self.storedOnce(stored, input), "\(stored.count) lines stored for 12,000")
    }

    /// streamup's own sink takes a window of segments of one stream (it holds one that comes
    /// before the gap is filled aside): the stored stream is the input, byte for byte.
    @Test func theSinkJoinsAWindowOfSegments() async throws {
        let scratch = try TemporaryDirectory()
        let sink = try startedSink(port: 0, storingIn: scratch.url)
        defer { sink.stop() }
        let input = Self.lines(20_000)
        let child = try StreamupProcess(["--max-in-flight", "8", "--segment-bytes", "8k", sink.url.absoluteString])
        child.write(input)
        child.closeStdin()
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        #expect(streamText(in: scratch.url) == input)
    }
}
