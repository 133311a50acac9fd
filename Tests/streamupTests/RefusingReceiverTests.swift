import Foundation
import StreamUp
import StreamUpTestSupport
import Testing

/// The built binary against receivers that refuse (the validators' refusal options, real
/// ClickHouse): a record too large for any request, a rate limit's burst below the preset's
/// request size, Loki 3's grouped partial refusals, a connection dropped mid-body, permanent
/// ClickHouse errors. Every line the receiver takes arrives once, whole; what it cannot take
/// is set aside whole or stops the stream with one line.
@Suite(.timeLimit(.minutes(3))) struct RefusingReceiverTests {
    /// 3,000 short lines, one line of 300 KiB, 3,000 more.
    static func linesAroundABigOne() -> (lines: [[UInt8]], big: [UInt8]) {
        let big = Array(String(repeating: "B", count: 300 << 10).utf8)
        let before = (0..<3000).map { Array("before \($0) \(String(repeating: "x", count: 60))".utf8) }
        let after = (0..<3000).map { Array("after \($0) \(String(repeating: "y", count: 60))".utf8) }
        return (before + [big] + after, big)
    }

    /// Without dead letters the stream stops at that record with one line that says why; the
    /// lines before it were delivered.
    @Test func aRecordTooLargeForAnyRequestStopsTheStreamWithOneLine() async throws {
        let (lines, big) = Self.linesAroundABigOne()
        let (status, stderr, snapshot) = try await ReceiverPresetTests.ship(
            "vector", [], lines: lines, validatorOptions: ["--refuse-over", "65536"])
        #expect(status == 1, "stderr: \(stderr)")
        let index = lines.firstIndex(of: big)!
        #expect(snapshot.holds(Array(lines[..<index])))
        #expect(
            stderr.contains(
                "the server answered 413 (too large) to a request of one record of 307201 bytes alone; no smaller request can hold it; stopping (--dead-letter DIR sets such a record aside and goes on)"
            ), "\(stderr)")
    }

    /// Loki answers 429 to every request over its `ingestion_burst_size_mb`, below the preset's
    /// 1 MiB: requests shrink until they pass, honouring Retry-After (it used to send the same
    /// request 11 times and exit 1). The failure line shows the answer's first line.
    @Test func aRateLimitBurstBelowTheRequestSizeShrinksRequests() async throws {
        let lines = (0..<6000).map { Array("line \($0) \(String(repeating: "z", count: 200))".utf8) }
        let (status, stderr, snapshot) = try await ReceiverPresetTests.ship(
            "loki", [], lines: lines, validatorOptions: ["--limit-rate-over", "300000", "--retry-after", "1"])
        #expect(status == 0, "stderr: \(stderr)")
        #expect(snapshot.errors.isEmpty, "\(snapshot.errors.prefix(3))")
        #expect(snapshot.holds(lines))
        #expect(stderr.contains("the server answered 429 (too many requests) twice to a request of"), "\(stderr)")
        #expect(stderr.contains("delivery is failing: the server answered 429: rate limited: a request of"), "\(stderr)")
    }

    /// Loki 3 refuses lines over `max_line_size` in its grouped form (`30 errors like: max entry
    /// size …`) and stores the others: only those lines are refused and kept (it used to keep
    /// every line of the request as refused, or stop).
    @Test func lokisGroupedRefusalsKeepOnlyTheRefusedLines() async throws {
        let scratch = try TemporaryDirectory()
        let lines = (0..<600).map { index -> [UInt8] in
            Array((index % 20 == 3 ? "long \(index) " + String(repeating: "L", count: 3000) : "short \(index)").utf8)
        }
        let long = lines.filter { $0.starts(with: Array("long".utf8)) }
        let (status, stderr, snapshot) = try await ReceiverPresetTests.ship(
            "loki", ["--dead-letter", scratch.path], lines: lines, validatorOptions: ["--max-line-size", "2000"])
        #expect(status == 1, "stderr: \(stderr)")
        #expect(snapshot.holds(lines.filter { !$0.starts(with: Array("long".utf8)) }))
        // (A push gathers its entries per stream, so Loki refuses them in that order.)
        #expect(ReceiverValidator.Snapshot.sorted(snapshot.rejectedLines) == ReceiverValidator.Snapshot.sorted(long), "refused lines were sent again")
        #expect(stderr.contains("Loki refused") && stderr.contains("max entry size '2000' bytes exceeded"), "\(stderr)")
        let kept = try ReceiverPresetTests.deadLetterLines(in: scratch.url)
        #expect(kept.count == long.count && kept.allSatisfy { $0.contains("long ") && !$0.contains("short ") }, "\(kept.count) kept")
    }

    /// A receiver that drops the connection mid-body (a restart) once: the segment goes again,
    /// every line arrives once, and the line says what happened without advice to segment.
    @Test func aConnectionDroppedMidSegmentIsRetried() async throws {
        let lines = (0..<2000).map { Array("line \($0)".utf8) }
        let (status, stderr, snapshot) = try await ReceiverPresetTests.ship(
            "vector", [], lines: lines, validatorOptions: ["--drop-after", "1000"])
        #expect(status == 0, "stderr: \(stderr)")
        #expect(snapshot.holds(lines))
        #expect(stderr.contains("delivery is failing") && !stderr.contains("segmented delivery"), "\(stderr)")
    }

    /// A bulk answer of 10,000 items is hundreds of kilobytes, within the preset's response
    /// limit: no warning that it was cut (it said "only the first 450026 bytes of the answer
    /// are kept").
    @Test func aLongBulkAnswerIsNotCalledCut() async throws {
        let lines = (0..<12000).map { Array("doc \($0)".utf8) }
        let (status, stderr, snapshot) = try await ReceiverPresetTests.ship("elasticsearch", [], lines: lines)
        #expect(status == 0, "stderr: \(stderr)")
        #expect(snapshot.holds(lines))
        #expect(!stderr.contains("of the answer are kept"), "\(stderr)")
    }

    /// ClickHouse answers 500 with an exception code for a column the table lacks: final at
    /// once, with the exception on the line (it was retried for 60 s as "the server answered 500").
    @Test(.enabled(if: ClickHouse.isAvailable)) func clickHousePermanentErrorsAreFinal() async throws {
        try await ClickHouse.with(tables: ["logs (message String) ENGINE = MergeTree() ORDER BY tuple()"]) { clickhouse in
            let child = try StreamupProcess(["--to", "clickhouse", clickhouse.url.absoluteString])
            child.write("one\ntwo\n")
            child.closeStdin()
            let status = await child.waitForExit(timeout: 30)
            #expect(status == 1, "stderr: \(child.stderr)")
            #expect(child.stderr.contains("Code: 117"), "\(child.stderr)")
            #expect(!child.stderr.contains("delivery is failing"), "retried: \(child.stderr)")
        }
    }
}
