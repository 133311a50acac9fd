import Foundation
import StreamUpTestSupport
import Testing

/// The command matrix (``MatrixRow/table``), end to end: for every row, the built binary runs
/// the command as a user types it into a fresh receiver (the sink, the validator written from
/// the receiver's API documentation, or the real ClickHouse), and the receiver must hold every
/// line once, whole, in its own format: no request it found wrong, no record it refused, and
/// the command's exit status 0.
///
/// Each row is a test case; the rows of a test run side by side, ``MatrixRun/limit`` at a time
/// (``MatrixRun``: its first test case starts them all, each case reports its own row's
/// problems). Every wait is a poll with a deadline; a row whose delivery fails (the receiver
/// counts a problem, or streamup says "delivery is failing") stops waiting at once.
@Suite(.timeLimit(.minutes(5))) struct CommandMatrixTests {
    /// The rows into the sink and the validators.
    static let rows = MatrixRow.selected.filter { $0.target.server != .clickhouse && $0.command != .journal && !$0.sendsProtobuf }
    /// The journal rows.
    static let journalRows = MatrixRow.selected.filter { $0.command == .journal && !$0.sendsProtobuf }
    /// The OTLP rows in protobuf (the journal's where `systemd-journal-remote` is installed).
    static let otlpRows = MatrixRow.selected.filter { $0.sendsProtobuf && ($0.command != .journal || JournalFiles.isAvailable) }
    /// The ClickHouse rows.
    static let clickHouseRows = MatrixRow.selected.filter { $0.target.server == .clickhouse && $0.command != .journal }

    @Test(arguments: rows)
    func row(_ row: MatrixRow) async {
        await MatrixRun.shared.report(of: row, among: Self.rows, check: Self.check).replay()
    }

    /// The journal rows: journal files written by `systemd-journal-remote`, where it is
    /// installed (always under CI).
    @Test(.enabled(if: JournalFiles.isAvailable), arguments: journalRows)
    func journalRow(_ row: MatrixRow) async {
        await MatrixRun.shared.report(of: row, among: Self.journalRows, check: Self.check).replay()
    }

    /// The OTLP rows in protobuf: the validator decodes them with the OpenTelemetry project's
    /// classes (PyPI `opentelemetry-proto`), where they are installed (always under CI); the
    /// journal's where `systemd-journal-remote` is too.
    @Test(
        .enabled(if: OptionalTool.opentelemetryProto.isAvailable, Comment(rawValue: OptionalTool.opentelemetryProto.skipReason)),
        arguments: otlpRows)
    func otlpRow(_ row: MatrixRow) async {
        await MatrixRun.shared.report(of: row, among: Self.otlpRows, check: Self.check).replay()
    }

    /// The ClickHouse rows: the real server, where it is installed (always under CI).
    @Test(.enabled(if: ClickHouse.isAvailable), arguments: clickHouseRows)
    func clickHouseRow(_ row: MatrixRow) async {
        await MatrixRun.shared.report(of: row, among: Self.clickHouseRows, check: Self.check).replay()
    }

    /// Runs `row` and checks what arrived.
    static func check(_ row: MatrixRow, report: RowReport) async throws {
        try await MatrixReceiver.with(row.target, validatorOptions: row.variant.validatorOptions) { receiver in
            let scratch = try TemporaryDirectory()
            let log = scratch.file("app.log")
            let deadURL = "http://127.0.0.1:\(unusedLocalPort())"
            let arguments = row.arguments(url: receiver.url, dead: deadURL, log: log, scratch: scratch.path)
            if row.command == .run {
                let line = row.pipelineLine(url: receiver.url, dead: deadURL, log: log, scratch: scratch.path)
                try line.write(toFile: scratch.path + "/pipelines.conf", atomically: true, encoding: .utf8)
            }
            if row.command == .journal {
                // The first entries are there at the start, the rest come while it follows (``drive``).
                var journal = try JournalFiles(directory: scratch.path + "/journal")
                let lines = row.variant.input.lines
                try journal.append(lines[..<(lines.count / 2)].map { JournalFiles.Entry(bytes: $0) })
            }
            let child = try StreamupProcess(arguments)
            let records = row.command == .heartbeat ? [] : row.variant.input.records
            let json = row.target.server == .sink && row.variant.formatsRecords
            // (A JSON record's message is text: a byte that is not UTF-8 is U+FFFD.)
            let expected = json ? records.map { Array(String(decoding: $0.message, as: UTF8.self).utf8) } : records.map(\.message).compactMap(row.target.shown)
            let status: Int32?
            do {
                status = try await drive(row, child, into: receiver, log: log, records: expected.count, report: report)
            } catch {
                child.signal(SIGKILL)  // a row that could not go on leaves nothing running
                _ = await child.waitForExit(timeout: 10)
                throw error
            }
            var stored = try await receiver.stored(wholeLines: !row.variant.opaque)
            let context =
                "\(arguments.joined(separator: " "))\nexit status \(status.map { String($0) } ?? "none (killed)"); stderr: \(child.stderr.suffix(1_000))"
            report.expect(status == 0, "\(context)")
            // Nothing refused, so nothing kept as a dead letter either.
            let dead = (try? FileManager.default.contentsOfDirectory(atPath: MatrixVariant.deadLetterDirectory(scratch: scratch.path))) ?? []
            report.expect(dead.isEmpty, "dead letters kept: \(dead)\n\(context)")
            let clean = stored.problems.isEmpty
            report.expect(clean, "the receiver found \(stored.problems.count) problems: \(stored.problems.prefix(3).joined(separator: "; "))\n\(context)")
            checkRequests(stored, row.variant, context: context, report: report)
            if row.command == .heartbeat {
                checkBeats(stored, context: context, report: report)
                return
            }
            if json {
                var fields = row.variant.fields
                if row.command == .tail || row.command == .run { fields["path"] = log }
                if row.command == .journal { fields.merge(["unit": "app.service", "priority": "6", "identifier": "app"]) { $1 } }
                stored.lines = checkFields(stored.lines, records, fields: fields, context: context, report: report)
            }
            let expectedOrder = stored.ordered ? expected : expected.sorted { $0.lexicographicallyPrecedes($1) }
            let everyLineOnce = stored.lines == expectedOrder
            report.expect(everyLineOnce, "\(difference(expected: expected, stored: stored.lines))\n\(context)")
        }
    }

    /// The requests a variant that says how it sends must have made (as far as the receiver
    /// tells): `--single-request` one request, a live chunked one; `--resumable` its protocol's
    /// methods, one upload created.
    static func checkRequests(_ stored: MatrixReceiver.Stored, _ variant: MatrixVariant, context: String, report: RowReport) {
        guard let wanted = variant.methods else { return }
        if wanted == ["POST"] {
            if let requests = stored.requests { report.expect(requests == 1, "\(requests) requests, not one\n\(context)") }
            if let chunked = stored.chunked { report.expect(chunked == 1, "\(chunked) chunked requests, not one live one\n\(context)") }
        } else if let methods = stored.methods {
            report.expect(Set(wanted).isSubset(of: methods), "methods \(methods), not all of \(wanted)\n\(context)")
            report.expect(methods.filter { $0 == "POST" }.count == 1, "methods \(methods): more than one upload\n\(context)")
        }
    }

    /// `--format ndjson` into the sink: each stored line is a JSON record with the host,
    /// `fields` (`--field`s, the file's path for tail) and the input record's own fields
    /// (a container's `stream`); returns their messages.
    static func checkFields(_ lines: [[UInt8]], _ records: [MatrixInput.Record], fields: [String: String], context: String, report: RowReport) -> [[UInt8]] {
        lines.enumerated().map { index, line in
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any], let message = object["message"] as? String else {
                report.record("record \(index) is not a JSON record with a message: \(MatrixReport.show(line))\n\(context)")
                return line
            }
            let fields = fields.merging(records.indices.contains(index) ? records[index].fields : [:]) { $1 }
            let wrong = fields.filter { object[$0.key] as? String != $0.value }
            report.expect(wrong.isEmpty && object["host"] is String, "record \(index) lacks \(wrong) or host: \(object)\n\(context)")
            return Array(message.utf8)
        }
    }

    /// Feeds the command what it reads (stdin, the file; heartbeat makes its own), scrapes
    /// its metrics if the row says so, and stops it as a user would; returns its exit status
    /// (see ``stop(_:when:holds:)``).
    static func drive(_ row: MatrixRow, _ child: StreamupProcess, into receiver: MatrixReceiver, log: String, records: Int, report: RowReport) async throws
        -> Int32?
    {
        let lines = row.variant.input.lines
        let scrape: @Sendable () async -> Void = { if row.variant.scrapesMetrics { await checkMetrics(child, row: row, report: report) } }
        switch row.command {
        case .stdin:
            child.write(Data(lines.map { $0 + [0x0A] }.joined()))
            if row.variant.scrapesMetrics {
                // Held open until the receiver has everything, so the scrape sees a live run.
                _ = await stop(child, when: receiver, holds: records, failingOnPurpose: row.variant.losesAnswers, signal: false)
                await scrape()
            }
            child.closeStdin()
            return await stop(child, when: receiver, holds: nil, failingOnPurpose: row.variant.losesAnswers)
        case .tail, .run:
            // The file appears once the pattern is watched ("waiting for" on stderr), so it is
            // read from its beginning; then its lines come in two writes.
            try report.require(await eventually { child.stderr.contains("waiting for \(log)") }, "stderr: \(child.stderr)")
            let half = lines.count / 2
            try Data(lines[..<half].map { $0 + [0x0A] }.joined()).write(to: URL(fileURLWithPath: log))
            let handle = try report.require(FileHandle(forWritingAtPath: log))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(lines[half...].map { $0 + [0x0A] }.joined()))
            try handle.close()
            return await stop(child, when: receiver, holds: records, failingOnPurpose: row.variant.losesAnswers, before: scrape)
        case .heartbeat:
            return await stop(child, when: receiver, holds: 3, before: scrape)
        case .journal:
            // The first half of the entries was there at the start (``check(_:)``); the rest
            // comes while streamup follows.
            let half = lines.count / 2
            var journal = try JournalFiles(directory: (log as NSString).deletingLastPathComponent + "/journal", written: half)
            try journal.append(lines[half...].map { JournalFiles.Entry(bytes: $0) })
            return await stop(child, when: receiver, holds: records, failingOnPurpose: row.variant.losesAnswers, before: scrape)
        }
    }

    /// `--metrics 0`, scraped once the receiver holds the row's records: `/health` is 200, the
    /// lines read are every line of the input, those a filter left out too (heartbeat: a beat
    /// each), the records dropped are the lines a filter left out, bytes were delivered, every
    /// request answered 2xx.
    static func checkMetrics(_ child: StreamupProcess, row: MatrixRow, report: RowReport) async {
        guard let url = await MetricsCommandTests.metricsURL(of: child), let port = url.port.map(UInt16.init) else {
            report.record("no metrics URL on stderr: \(child.stderr)")
            return
        }
        let lines = Double(row.variant.input.lines.count)
        let filters = row.variant.options.contains("--drop") || row.variant.options.contains("--keep")
        let dropped = filters ? Double(row.variant.input.lines.count - row.variant.input.records.count) : nil
        let counted = await MetricsCommandTests.scraped {
            if let dropped, MetricsCommandTests.sample("streamup_records_dropped_total", port: port) != dropped { return false }
            guard let read = MetricsCommandTests.sample("streamup_lines_read_total", port: port),
                let delivered = MetricsCommandTests.sample("streamup_bytes_delivered_total", port: port),
                let total = MetricsCommandTests.sample("streamup_bytes_read_total", port: port)
            else { return false }
            // (Beats go on: what was read need not all be delivered at one instant.)
            return row.command == .heartbeat ? read >= 3 && delivered > 0 : read == lines && delivered == total && delivered > 0
        }
        let scrape = LoopbackGet.fetch(port: port, "/metrics").map { String(decoding: $0.body, as: UTF8.self) } ?? ""
        report.expect(counted, "lines read (\(lines) lines in), records dropped or bytes delivered do not add up: \(scrape)")
        report.expect(MetricsCommandTests.health(port: port) == 200, "\(scrape)")
        let requests = scrape.split(separator: "\n").filter { $0.hasPrefix("streamup_requests_total{") }
        report.expect(!requests.isEmpty && requests.allSatisfy { $0.contains("status=\"2xx\"") }, "\(requests)")
    }

    /// Waits until the receiver holds at least `records` records (nil: until streamup ends by
    /// itself, as a stdin row does), then runs `before` and stops streamup with SIGTERM
    /// (unless `signal` is false) unless it has exited; returns its exit status (nil: it did
    /// not exit, and was killed; or, without `signal`, has not exited). A row whose delivery
    /// fails (streamup says so, unless the receiver fails it on purpose, or the receiver counts
    /// a problem) stops waiting at once: the row has failed, and a short wait for the exit says
    /// the rest.
    static func stop(
        _ child: StreamupProcess, when receiver: MatrixReceiver, holds records: Int?, failingOnPurpose: Bool = false, signal: Bool = true,
        before: @Sendable () async -> Void = {}
    ) async -> Int32? {
        let healthy = await onOwnThread {
            // The receiver is asked at most every 50 ms: each answer costs it a JSON dump of
            // everything it holds, and the process checks in between cost nothing.
            var asked = ContinuousClock.now - .seconds(1)
            return poll(within: .seconds(30)) { () -> Bool? in
                if !child.process.isRunning { return true }
                if !failingOnPurpose && child.stderr.contains("delivery is failing") { return false }
                // (stdin: streamup's own end, whatever the receiver found on the way.)
                guard let records, ContinuousClock.now - asked >= .milliseconds(50) else { return nil }
                asked = ContinuousClock.now
                guard let count = receiver.count() else { return nil }
                if count.problems > 0 { return false }
                return count.records >= records ? true : nil
            } ?? false
        }
        if healthy && child.process.isRunning { await before() }
        guard signal else { return nil }
        if child.process.isRunning { child.signal(SIGTERM) }
        return await child.waitForExit(timeout: healthy ? 60 : 10)
    }

    /// Heartbeat rows: every record is a beat (`ts`, `seq`, `host`), `seq` runs 1...n without
    /// a gap or a repeat, and the last is the `{"event":"stop"}` record SIGTERM sends.
    static func checkBeats(_ stored: MatrixReceiver.Stored, context: String, report: RowReport) {
        var beats: [[String: Any]] = []
        for line in stored.lines {
            guard let beat = (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any] else {
                report.record("a record is not a beat: \(MatrixReport.show(line))\n\(context)")
                return
            }
            beats.append(beat)
        }
        if !stored.ordered { beats.sort { ($0["seq"] as? Int ?? 0) < ($1["seq"] as? Int ?? 0) } }
        report.expect(beats.count >= 3, "\(beats.count) beats arrived\n\(context)")
        report.expect(beats.map { $0["seq"] as? Int ?? 0 } == Array(1..<(beats.count + 1)), "seq: \(beats.map { $0["seq"] as? Int ?? 0 })\n\(context)")
        report.expect(beats.allSatisfy { $0["ts"] is String && $0["host"] is String }, "\(beats.prefix(2))\n\(context)")
        report.expect(beats.last?["event"] as? String == "stop", "the last beat: \(String(describing: beats.last))\n\(context)")
    }

    /// What differs between the lines expected and those stored: missing, extra, repeated.
    static func difference(expected: [[UInt8]], stored: [[UInt8]]) -> String {
        var left = stored
        var missing: [[UInt8]] = []
        for line in expected {
            if let index = left.firstIndex(of: line) { left.remove(at: index) } else { missing.append(line) }
        }
        var words = ["expected \(expected.count) lines, stored \(stored.count)"]
        if !missing.isEmpty { words.append("missing \(MatrixReport.show(missing))") }
        if !left.isEmpty { words.append("not expected \(MatrixReport.show(Array(left.prefix(6))))") }
        if missing.isEmpty && left.isEmpty { words.append("in another order: \(MatrixReport.show(stored))") }
        return words.joined(separator: "; ")
    }
}
