import Foundation
import StreamUp
import StreamUpTestSupport
import Testing

/// `streamup --to clickhouse` against the real server (Debian's ClickHouse 18.16), with the
/// table README's "Receivers" section tells users to create. JSONEachRow
/// (https://clickhouse.com/docs/en/interfaces/formats#jsoneachrow) over the HTTP interface
/// (https://clickhouse.com/docs/en/interfaces/http); 18.16 reads a `DateTime` from whole Unix
/// seconds whatever the server's time zone, and has no `DateTime64`.
@Suite(.timeLimit(.minutes(3))) struct ClickHousePresetTests {
    static let table = "logs (time DateTime, host String, path String, message String) ENGINE = MergeTree() ORDER BY time"

    /// Every line is one row, byte for byte (control characters too; bytes that are not UTF-8
    /// arrive as U+FFFD), with the time it was read and the
    /// host; the URL without a query gets `INSERT INTO logs FORMAT JSONEachRow`. As segments
    /// (the default) and as one request.
    @Test(.enabled(if: ClickHouse.isAvailable), .serialized, arguments: [[], ["--single-request"]])
    func everyLineIsARow(options: [String]) async throws {
        let lines = ReceiverPresetTests.lines(5000)
        try await ClickHouse.with(tables: [Self.table]) { clickhouse in
            let started = Int(Date().timeIntervalSince1970)
            let child = try StreamupProcess(["--to", "clickhouse"] + options + [clickhouse.url.absoluteString])
            let input = Data(lines.map { $0 + [0x0A] }.joined())
            Thread.detachNewThread {
                child.write(input)
                child.closeStdin()
            }
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let ended = Int(Date().timeIntervalSince1970) + 1
            #expect(try await clickhouse.query("SELECT count() FROM logs") == "5000")
            // (Prefixed, so that an empty message is not an empty line the answer's trim drops.)
            let stored = try await clickhouse.query("SELECT concat('h', hex(message)) FROM logs").split(separator: "\n").map(String.init).sorted()
            #expect(stored == lines.map { "h" + Self.storedHex($0) }.sorted())
            let summary = try await clickhouse.query(
                "SELECT min(toUnixTimestamp(time)), max(toUnixTimestamp(time)), uniqExact(host), any(host), concat('p', any(path)) FROM logs")
            let fields = summary.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            try #require(fields.count == 5, "\(summary)")
            #expect(Int(fields[0]).map { $0 >= started } == true && Int(fields[1]).map { $0 <= ended } == true, "\(summary), run \(started)...\(ended)")
            #expect(fields[2] == "1" && fields[3] == RecordFormatter.localHostName() && fields[4] == "p", "\(summary)")
        }
    }

    /// `streamup tail FILE --to clickhouse URL`: every line of the file is one row, once and
    /// whole (raw lines in JSONEachRow would be refused whole with a 500).
    @Test(.enabled(if: ClickHouse.isAvailable)) func tailMakesRows() async throws {
        let scratch = try TemporaryDirectory()
        let file = scratch.url.appendingPathComponent("app.log").path
        let lines = ReceiverPresetTests.lines(2000)
        try Data(lines.flatMap { $0 + [0x0A] }).write(to: URL(fileURLWithPath: file))
        try await ClickHouse.with(tables: [Self.table]) { clickhouse in
            let child = try StreamupProcess(["tail", "--from-start", file, "--to", "clickhouse", clickhouse.url.absoluteString])
            let deadline = ContinuousClock.now + TestTime.scaled(.seconds(60))
            // Each look is a query (a Python run): no pause is needed between them.
            while try await clickhouse.query("SELECT count() FROM logs") != "2000", ContinuousClock.now < deadline {}
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let stored = try await clickhouse.query("SELECT concat('h', hex(message)) FROM logs").split(separator: "\n").map(String.init).sorted()
            #expect(stored == lines.map { "h" + Self.storedHex($0) }.sorted())
            #expect(try await clickhouse.query("SELECT uniqExact(path), any(path) FROM logs") == "1\t\(file)")
        }
    }

    /// The hex ClickHouse shows for a line: its bytes, each ill-formed UTF-8 sequence replaced
    /// by U+FFFD (one per maximal subpart, as Swift's decoder does).
    static func storedHex(_ line: [UInt8]) -> String {
        ReceiverPresetTests.stored(line).map { String(format: "%02X", $0) }.joined()
    }
}
