import Foundation
import StreamUpTestSupport
import Testing

/// `--to clickhouse` into a `ReplicatedMergeTree` table, which drops an insert whose block is
/// identical to one it stored (Debian's ClickHouse 18.16 with Debian's ZooKeeper): every resend
/// of a segment is the first send byte for byte, so lost answers and `kill -9` restarts store
/// every line exactly once.
@Suite(.timeLimit(.minutes(5)), .serialized) struct ClickHouseExactlyOnceTests {
    static let table =
        "logs (time DateTime, host String, path String, message String) ENGINE = ReplicatedMergeTree('/clickhouse/tables/logs', '{replica}') ORDER BY time"

    static var isAvailable: Bool { ClickHouse.isReplicatedAvailable }

    /// `count()` and `uniqExact(message)` of the table.
    static func rows(_ clickhouse: ClickHouse) async throws -> String {
        try await clickhouse.query("SELECT count(), uniqExact(message) FROM logs")
    }

    /// A proxy stores every request in ClickHouse and drops every third answer: the segment is
    /// sent again, whole and identical (not its first half), and the table drops the copy.
    @Test(.enabled(if: isAvailable)) func lostAnswersStoreEveryLineOnce() async throws {
        let count = 30_000
        try await ClickHouse.with(tables: [Self.table], zooKeeper: true, droppingAnswers: 3) { clickhouse in
            let child = try StreamupProcess(["--to", "clickhouse", "--segment-bytes", "32k", clickhouse.url.absoluteString])
            let input = Data((1...count).map { String(format: "line-%06d\n", $0) }.joined().utf8)
            Thread.detachNewThread {
                child.write(input)
                child.closeStdin()
            }
            let status = await child.waitForExit(timeout: 240)
            if status == nil { child.signal(SIGKILL) }
            #expect(status == 0, "stderr: \(child.stderr.suffix(2_000))")
            #expect(child.stderr.contains("recovered"), "no answer was lost: \(child.stderr)")
            #expect(try await Self.rows(clickhouse) == "\(count)\t\(count)", "stderr: \(child.stderr.suffix(2_000))")
        }
    }

    /// `tail --state --spool`, killed with SIGKILL three times while the file grows a few
    /// lines at a time (so segments are cut by time, holding what had arrived) and started
    /// again, behind a proxy that drops every third answer: a segment in the spool whose answer
    /// was lost is sent again as it was cut, not with the lines that came since, and every line
    /// is one row. Long set: ``lostAnswersStoreEveryLineOnce`` shows identical resends dropped,
    /// `SpoolCrashTests.killedAtRandomPointsTheSpoolDeliversEveryByteOnce` the spool across `kill -9`.
    @Test(.long, .enabled(if: isAvailable)) func killedTailStoresEveryLineOnce() async throws {
        let scratch = try TemporaryDirectory()
        let file = scratch.file("app.log")
        let total = 20_000
        try await ClickHouse.with(tables: [Self.table], zooKeeper: true, droppingAnswers: 3) { clickhouse in
            _ = FileManager.default.createFile(atPath: file, contents: nil)
            let arguments = [
                "tail", "--from-start", "--state", scratch.file("state.json"), "--spool", scratch.file("spool"), "--segment-bytes", "8k",
                "--segment-seconds", "50ms", file, "--to", "clickhouse", clickhouse.url.absoluteString,
            ]
            let writer = try #require(FileHandle(forWritingAtPath: file))
            var written = 0
            func grow(by lines: Int) throws {
                let next = min(total, written + lines)
                guard next > written else { return }
                try writer.write(contentsOf: Data(((written + 1)...next).map { String(format: "grow-%06d\n", $0) }.joined().utf8))
                written = next
            }
            var child = try StreamupProcess(arguments)
            defer { child.signal(SIGKILL) }
            for round in 1...3 {
                // Killed while rows arrive: some of what was written is in the table, some not.
                let target = round * 4_000
                let reached = try await poll(within: .seconds(60)) { () -> Bool? in
                    try grow(by: 40)
                    let stored = Int(try clickHouseCount(clickhouse)) ?? 0
                    return stored >= target ? true : nil
                }
                #expect(reached == true, "round \(round): \(child.stderr.suffix(1_000))")
                child.signal(SIGKILL)
                _ = await child.waitForExit(timeout: 30)
                child = try StreamupProcess(arguments)
            }
            try grow(by: total)
            try writer.close()
            let all = try await poll(within: .seconds(90)) { () -> Bool? in
                (Int(try clickHouseCount(clickhouse)) ?? 0) >= total ? true : nil
            }
            child.signal(SIGTERM)
            #expect(await child.waitForExit(timeout: 60) == 0, "stderr: \(child.stderr.suffix(2_000))")
            #expect(all == true)
            #expect(try await Self.rows(clickhouse) == "\(total)\t\(total)")
        }
    }

    /// The table's `count()`, read with a plain GET (a poll asks often).
    private func clickHouseCount(_ clickhouse: ClickHouse) throws -> String {
        guard let port = clickhouse.url.port,
            let answer = LoopbackGet.fetch(port: UInt16(port), "/?query=SELECT%20count()%20FROM%20logs"), answer.status == 200
        else { return "" }
        return String(decoding: answer.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
