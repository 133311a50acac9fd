import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

/// The receiver of one matrix row, whatever stands in for it (the sink, a validator, the real
/// ClickHouse), seen the same way: a URL to send to, a cheap count to wait on, and what it
/// stored in the end.
///
/// Thread safety: immutable; the servers it holds are safe to call from any thread.
final class MatrixReceiver: Sendable {
    /// What the receiver holds.
    ///
    /// Thread safety: a value type.
    struct Stored: Sendable {
        /// Each stored record's line (its message), byte for byte; in the receiver's own order
        /// where it has one (the sink's stream offsets, Loki's and OTLP's times,
        /// Elasticsearch's `_id`s), else sorted: requests out at once may arrive in any order,
        /// and ClickHouse's table has none.
        var lines: [[UInt8]]
        /// Whether ``lines`` is in the receiver's own order (else sorted).
        var ordered: Bool
        /// Everything the receiver found wrong or refused: the validator's `errors` and
        /// `rejected`, the sink's requests not answered 2xx or cut short. Empty for a correct
        /// client.
        var problems: [String]
        /// The method of each request it got (the sink); nil where it does not say.
        var methods: [String]? = nil
        /// How many ingestion requests it got; nil where it does not say (ClickHouse).
        var requests: Int? = nil
        /// How many of them had a chunked body (the sink); nil where it does not say.
        var chunked: Int? = nil
    }

    private enum Server: Sendable {
        case sink(SinkServer)
        case validator(ReceiverValidator)
        case clickhouse(ClickHouse)
    }

    private let server: Server
    /// The sink's request bodies decoded so far, by arrival number.
    private let decoded = Locked<[Int: Result<[UInt8], SinkProblem>]>([:])
    /// The URL the row sends to (the target's path added).
    let url: String

    private init(_ server: Server, url: String) {
        self.server = server
        self.url = url
    }

    /// Runs `body` with a fresh receiver for `target` (a validator started with
    /// `validatorOptions` added to the target's), stopped afterwards.
    static func with<T>(_ target: MatrixTarget, validatorOptions: [String] = [], _ body: (MatrixReceiver) async throws -> T) async throws -> T {
        switch target.server {
        case .sink:
            return try await withSink(configure: { $0.keepBodiesInMemory = true }) { sink, _ in
                try await body(MatrixReceiver(.sink(sink), url: sink.url.absoluteString + target.path))
            }
        case .validator(let kind):
            return try await ReceiverValidator.with(kind, target.validatorOptions + validatorOptions) { validator in
                try await body(MatrixReceiver(.validator(validator), url: validator.url.absoluteString + target.path))
            }
        case .clickhouse:
            return try await ClickHouse.with(tables: [ClickHousePresetTests.table]) { clickhouse in
                try await body(MatrixReceiver(.clickhouse(clickhouse), url: clickhouse.url.absoluteString + target.path))
            }
        }
    }

    /// How many records it holds now, and how many problems (refusals, contract errors) it
    /// saw; nil when it cannot tell right now. Blocking and cheap: for a wait on a thread of
    /// its own.
    func count() -> (records: Int, problems: Int)? {
        switch server {
        case .sink(let sink):
            var records = 0
            var problems = 0
            for request in sink.requests {
                if case .success(let body) = decodedBody(request) {
                    records += body.count(where: { $0 == 0x0A })
                } else {
                    problems += 1
                }
            }
            return (records, problems)
        case .validator(let validator):
            return validator.count()
        case .clickhouse(let clickhouse):
            guard let port = clickhouse.url.port,
                let answer = LoopbackGet.fetch(port: UInt16(port), "/?query=SELECT%20count()%20FROM%20logs"), answer.status == 200,
                let count = Int(String(decoding: answer.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
            else { return nil }
            return (count, 0)
        }
    }

    /// What it stored, read once the command has ended; `wholeLines`: each request to the sink
    /// must end on a line (not so for opaque bytes, `--records none`).
    func stored(wholeLines: Bool = true) async throws -> Stored {
        switch server {
        case .sink(let sink):
            // (Decoding a gzip body runs python3: on a thread of its own, never a task's.)
            let bodies = await onOwnThread { [self] in Self.inStreamOrder(sink.requests).map { ($0.sequence, decodedBody($0)) } }
            var bytes: [UInt8] = []
            var problems: [String] = []
            for (sequence, body) in bodies {
                switch body {
                case .success(let body):
                    if wholeLines && !body.isEmpty && body.last != 0x0A { problems.append("request \(sequence) does not end on a line") }
                    bytes += body
                case .failure(let problem):
                    problems.append("request \(sequence): \(problem.text)")
                }
            }
            var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
            if lines.last == [] { lines.removeLast() }
            let requests = sink.requests
            let chunked = requests.count { $0.headers.first(named: "Transfer-Encoding")?.lowercased().contains("chunked") ?? false }
            return Stored(lines: lines, ordered: true, problems: problems, methods: requests.map(\.method), requests: requests.count, chunked: chunked)
        case .validator(let validator):
            let snapshot = try await validator.snapshot()
            let rejected = snapshot.rejectedLines.map { "rejected: " + MatrixReport.show($0) }
            let lines = snapshot.ordered ? snapshot.lines : ReceiverValidator.Snapshot.sorted(snapshot.lines)
            return Stored(lines: lines, ordered: snapshot.ordered, problems: snapshot.errors + rejected, requests: snapshot.requests)
        case .clickhouse(let clickhouse):
            // Prefixed, so that an empty message is not an empty line the answer's trim drops.
            let answer = try await clickhouse.query("SELECT concat('h', hex(message)) FROM logs")
            let lines = answer.split(separator: "\n").map { Self.bytes(hex: $0.dropFirst()) }.sorted { $0.lexicographicallyPrecedes($1) }
            return Stored(lines: lines, ordered: false, problems: [])
        }
    }

    /// The sink's requests in the order of the stream they carry: by `Streamup-Offset` where
    /// every request of one stream has one (several may be out at once and arrive in any
    /// order), else as they arrived (a resumable upload's PATCHes are in order).
    static func inStreamOrder(_ requests: [SinkRequestEvent]) -> [SinkRequestEvent] {
        let offsets = requests.map { $0.headers.first(named: "Streamup-Offset").flatMap { Int($0) } }
        let streams = Set(requests.map { $0.headers.first(named: "Streamup-Stream-Id") ?? "" })
        guard streams.count == 1, offsets.allSatisfy({ $0 != nil }) else { return requests }
        return zip(offsets, requests).sorted { ($0.0 ?? 0, $0.1.sequence) < ($1.0 ?? 0, $1.1.sequence) }.map(\.1)
    }

    /// The body of a request the sink stored whole and answered 2xx, gzip decoded (each body
    /// is decoded once: a wait asks again and again), or why it does not count.
    private func decodedBody(_ request: SinkRequestEvent) -> Result<[UInt8], SinkProblem> {
        guard request.isComplete && (200..<300).contains(request.status) else {
            return .failure(SinkProblem(text: "status \(request.status), \(request.failure ?? "cut short")"))
        }
        if let known = decoded.withLock({ $0[request.sequence] }) { return known }
        let body = request.body ?? []
        let result: Result<[UInt8], SinkProblem>
        switch request.headers.first(named: "Content-Encoding") {
        case nil:
            result = .success(body)
        case "gzip":
            let program = "import sys, gzip; sys.stdout.buffer.write(gzip.decompress(sys.stdin.buffer.read()))"
            if let gunzip = try? ExternalTool.python(program, input: body), gunzip.status == 0 {
                result = .success(gunzip.output)
            } else {
                result = .failure(SinkProblem(text: "its gzip body does not decode"))
            }
        case let coding?:
            result = .failure(SinkProblem(text: "Content-Encoding \(coding)"))
        }
        decoded.withLock { $0[request.sequence] = result }
        return result
    }

    private static func bytes(hex: Substring) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) {
            bytes.append(UInt8(hex[index..<next], radix: 16) ?? 0x3F)
            index = next
        }
        return bytes
    }
}

/// Why a request to the sink does not count as stored.
///
/// Thread safety: a value type.
struct SinkProblem: Error, Sendable {
    let text: String
}

/// Text for failure messages that shows every byte: printable ASCII as it is, the rest `\xNN`
/// (so that a byte sent as it was and its U+FFFD replacement look different).
///
/// Thread safety: stateless.
enum MatrixReport {
    static func show(_ line: [UInt8]) -> String {
        "\"" + line.map { (0x20..<0x7F).contains($0) && $0 != 0x5C ? String(UnicodeScalar($0)) : String(format: "\\x%02X", $0) }.joined() + "\""
    }

    static func show(_ lines: [[UInt8]]) -> String {
        "[" + lines.map { show($0) }.joined(separator: ", ") + "]"
    }
}
