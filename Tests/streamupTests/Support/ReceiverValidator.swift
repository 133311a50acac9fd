import Foundation
import StreamUpTestSupport
import Testing

/// A validating stand-in for a log receiver (`Tests/Receivers/receiver.py KIND`, written from
/// each receiver's published API documentation) for one test: a server of its own on a free
/// loopback port with a store of its own, read back over HTTP (`/_validator/count`,
/// `/_validator/snapshot`), stopped when the test's body returns.
///
/// One Python process per kind serves every test of the run (``ValidatorProcesses``): each test
/// gets a namespace in it (`POST /_validator/namespaces`), which is a receiver as fresh as a
/// process of its own, without a Python start (about 0.3 s on a loaded 2-core machine).
///
/// Thread safety: immutable; its methods may be called from any thread.
final class ReceiverValidator: Sendable {
    /// What the receiver stored, refused and found wrong.
    struct Snapshot {
        /// Ingestion requests it got.
        var requests: Int
        /// Each stored record's line, as bytes (Python's surrogateescape undoes `\udcXX`), in
        /// the receiver's own order where it has one (``ordered``), else as they arrived.
        var lines: [[UInt8]]
        /// Whether ``lines`` is in the receiver's own order, the one its queries give: Loki's and
        /// OTLP's nanosecond times (unique and increasing as streamup writes them),
        /// Elasticsearch's `_id`s (the stream and offset, or the file and position, of each
        /// record). Elsewhere records of requests out at once may arrive in any order, and
        /// only the multiset of records is what a user can rely on (``holds(_:)``).
        var ordered: Bool
        /// The first stored records (strings that held such escapes are shown with U+FFFD).
        var records: [[String: Any]]
        /// Per top-level field of the stored records: the JSON types its values had, and its
        /// distinct values when they are a few strings.
        var fields: [String: (types: Set<String>, values: Set<String>)]
        /// The lines of the records it refused (test-chosen rejections).
        var rejectedLines: [[UInt8]]
        /// Every way the client broke the receiver's documented contract: empty for a correct one.
        var errors: [String]

        var text: [String] { lines.map { String(decoding: $0, as: UTF8.self) } }

        /// Whether it holds `expected`, each record once: in that order where the receiver
        /// keeps one (``ordered``), else in any order.
        func holds(_ expected: [[UInt8]]) -> Bool {
            ordered ? lines == expected : Self.sorted(lines) == Self.sorted(expected)
        }

        /// ``holds(_:)`` for text.
        func holds(text expected: [String]) -> Bool { holds(expected.map { Array($0.utf8) }) }

        static func sorted(_ lines: [[UInt8]]) -> [[UInt8]] { lines.sorted { $0.lexicographicallyPrecedes($1) } }
    }

    let url: URL

    private init(url: URL) {
        self.url = url
    }

    /// Runs `body` with a fresh validator of `kind` started with `options`.
    static func with<T>(_ kind: String, _ options: [String] = [], _ body: (ReceiverValidator) async throws -> T) async throws -> T {
        let control = try await ValidatorProcesses.shared.port(of: kind)
        let request = try JSONSerialization.data(withJSONObject: ["options": options])
        let answer = await onOwnThread { LoopbackGet.request("POST", port: control, "/_validator/namespaces", body: Array(request)) }
        guard let answer, answer.status == 200,
            let object = try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any],
            let text = object["url"] as? String, let url = URL(string: text), let port = url.port
        else {
            throw ValidatorError(message: "no \(kind) validator with \(options): \(answer.map { String(decoding: $0.body, as: UTF8.self) } ?? "no answer")")
        }
        let validator = ReceiverValidator(url: url)
        let result: Result<T, Error>
        do {
            result = .success(try await body(validator))
        } catch {
            result = .failure(error)
        }
        _ = await onOwnThread { LoopbackGet.request("DELETE", port: control, "/_validator/namespaces/\(port)") }
        return try result.get()
    }

    /// How many records and problems (errors and refusals) it holds, read with a plain GET
    /// (no child process: this is what a wait repeats); nil when it cannot be read now.
    /// Blocking: call it on a thread of its own.
    func count() -> (records: Int, problems: Int)? {
        guard let port = url.port, let answer = LoopbackGet.fetch(port: UInt16(port), "/_validator/count"), answer.status == 200,
            let object = try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Int],
            let records = object["records"], let rejected = object["rejected"], let errors = object["errors"]
        else { return nil }
        return (records, rejected + errors)
    }

    /// What it holds now (`GET /_validator/snapshot`: Python turns each line back into its
    /// bytes and puts the records in the receiver's own order; see `snapshot_for_tests` in
    /// receiver.py).
    func snapshot() async throws -> Snapshot {
        let port = UInt16(url.port ?? 0)
        let answer = await onOwnThread { LoopbackGet.fetch(port: port, "/_validator/snapshot") }
        guard let answer, answer.status == 200, let object = try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any] else {
            throw ValidatorError(message: "cannot read the validator at \(url): \(answer.map { "status \($0.status)" } ?? "no answer")")
        }
        func lines(_ key: String) -> [[UInt8]] {
            let text = object[key] as? String ?? ""
            guard !text.isEmpty else { return [] }
            return text.split(separator: "\n", omittingEmptySubsequences: false).map { Array(Data(base64Encoded: String($0)) ?? Data()) }
        }
        var fields: [String: (types: Set<String>, values: Set<String>)] = [:]
        for (name, value) in object["fields"] as? [String: [String: [String]]] ?? [:] {
            fields[name] = (Set(value["types"] ?? []), Set(value["values"] ?? []))
        }
        return Snapshot(
            requests: object["requests"] as? Int ?? -1, lines: lines("lines"), ordered: object["ordered"] as? Bool ?? false,
            records: object["records"] as? [[String: Any]] ?? [],
            fields: fields, rejectedLines: lines("rejected"), errors: object["errors"] as? [String] ?? ["no errors list"])
    }
}

/// The validator processes of this test run, one per kind, each started when a test first asks
/// for its kind (`receiver.py KIND --namespaces`) and serving every later test of that kind.
/// A process ends when the test runner does: it reads its stdin, whose other end only the
/// runner holds, and exits at its end, so none outlives the run however the run ends.
///
/// Thread safety: an actor.
actor ValidatorProcesses {
    static let shared = ValidatorProcesses()

    /// A process and the port it takes namespace requests on.
    private struct Started: Sendable {
        let process: StreamupProcess
        let port: UInt16
    }

    /// Each kind's process, or its start while it is under way (so two tests asking at once
    /// share one).
    private var processes: [String: Task<Started, Error>] = [:]

    /// The control port of the process serving `kind`, started if none runs (or the last one
    /// died: the next test gets a new one).
    func port(of kind: String) async throws -> UInt16 {
        while true {
            guard let known = processes[kind] else {
                let start = Task { try await Self.start(kind) }
                processes[kind] = start
                return try await start.value.port
            }
            if let started = try? await known.value, started.process.process.isRunning { return started.port }
            if processes[kind] == known { processes[kind] = nil }
        }
    }

    private static func start(_ kind: String) async throws -> Started {
        let process = try PythonScript.start("receiver.py", [kind, "--port", "0", "--namespaces"])
        // Signal only after the first line: `python3` may be a shim that is not the server yet.
        guard let line = await process.firstLine(), line.hasPrefix("listening on "), let url = URL(string: String(line.dropFirst(13))),
            let port = url.port
        else {
            process.signal(SIGTERM)
            _ = await process.waitForExit()
            throw ValidatorError(message: "the \(kind) validator did not start: \(process.stderr)")
        }
        return Started(process: process, port: UInt16(port))
    }
}

/// A validator could not be started or read.
///
/// Thread safety: a value type.
struct ValidatorError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
