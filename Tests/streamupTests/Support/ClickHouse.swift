import Foundation
import StreamUpTestSupport
import Testing

/// A real ClickHouse server (Debian's clickhouse-server 18.16) for one test, started by hand by
/// `Tests/Receivers/clickhouse.py` on free loopback ports with its data in a temporary
/// directory, and stopped by the test (SIGTERM to the harness, which stops the server; not the
/// end of its stdin: a harness started beside another inherits the other's stdin pipe).
///
/// Thread safety: used from one test's task.
final class ClickHouse: Sendable {
    /// The server as a tool the tests need (`.ci/run` installs it).
    static let tool = OptionalTool.program(
        "/usr/sbin/clickhouse-server", install: "apt-get install clickhouse-server clickhouse-client")

    /// Tests that need the server run where it is installed, and always under CI (where its
    /// absence is a failure, not a skip).
    static var isAvailable: Bool { tool.isAvailable }

    let url: URL
    private let harness: StreamupProcess
    private let directory: TemporaryDirectory

    private init(url: URL, harness: StreamupProcess, directory: TemporaryDirectory) {
        self.url = url
        self.harness = harness
        self.directory = directory
    }

    /// Debian's ZooKeeper, which Replicated*MergeTree tables need (`.ci/run` installs it).
    static let zooKeeper = OptionalTool(name: "/usr/share/java/zookeeper.jar", install: "apt-get install zookeeper") {
        FileManager.default.fileExists(atPath: "/usr/share/java/zookeeper.jar")
    }

    /// Tests of Replicated tables run where ClickHouse and ZooKeeper are installed, and always
    /// under CI; elsewhere each missing one is named.
    static var isReplicatedAvailable: Bool { tool.isAvailable && zooKeeper.isAvailable }

    /// Runs `body` with a fresh server whose tables are `tables` (`NAME (COLUMNS) ENGINE = …`
    /// definitions), by default `t (n UInt64)` and `logs (message String)`; `zooKeeper`: with
    /// a ZooKeeper beside it (for `ReplicatedMergeTree` tables); `droppingAnswers` N: ``url`` is
    /// a proxy that forwards every request and drops every Nth answer to a POST (stored, never
    /// answered).
    static func with<T>(
        tables: [String] = [], zooKeeper: Bool = false, droppingAnswers: Int = 0, _ body: (ClickHouse) async throws -> T
    ) async throws -> T {
        let directory = try TemporaryDirectory()
        var arguments = ["start", "--dir", directory.path] + tables.flatMap { ["--table", $0] }
        if zooKeeper { arguments.append("--zookeeper") }
        if droppingAnswers > 0 { arguments += ["--drop-answers", String(droppingAnswers)] }
        let harness = try PythonScript.start("clickhouse.py", arguments)
        guard let line = await harness.firstLine(), let url = URL(string: line) else {
            harness.signal(SIGTERM)
            _ = await harness.waitForExit()
            throw ClickHouseError(message: "clickhouse did not start: \(harness.stderr)")
        }
        let server = ClickHouse(url: url, harness: harness, directory: directory)
        let result: Result<T, Error>
        do {
            result = .success(try await body(server))
        } catch {
            result = .failure(error)
        }
        // The first line came from the interpreter itself, so the signal reaches it.
        harness.signal(SIGTERM)
        _ = await harness.waitForExit()
        return try result.get()
    }

    /// The URL that inserts `FORMAT JSONEachRow` rows into `table`.
    func insertURL(into table: String) -> String {
        url.absoluteString + "/?query=" + "INSERT INTO \(table) FORMAT JSONEachRow".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
    }

    /// The answer to `sql`, trimmed. Asked by a Python program on a thread of its own: an
    /// `async` URLSession call blocks the calling thread while URLSession's shared queue is
    /// busy, and a live body of an in-process upload in another test keeps it busy (DesignNotes,
    /// platform fact 3); two such calls held both of the test runner's threads and every test stopped.
    func query(_ sql: String) async throws -> String {
        let program =
            "import sys, urllib.parse, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1] + '/?' + urllib.parse.urlencode({'query': sys.argv[2]}), timeout=60).read().decode('utf-8', 'replace'))"
        let (status, output, errors) = try await PythonScript.run(program, [url.absoluteString, sql])
        guard status == 0 else {
            throw ClickHouseError(message: "query failed: \(String(decoding: errors, as: UTF8.self).suffix(500))")
        }
        return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// The harness or a query failed.
///
/// Thread safety: a value type.
struct ClickHouseError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
