import Foundation
import StreamUpTestSupport
import Testing

/// `streamup --to NAME` against validators written from each receiver's published API
/// documentation (`Tests/Receivers/receiver.py`, which cites the pages): every request is a
/// complete, valid document (the validator finds no error), and every line arrives once, in
/// order, byte for byte. The built binary, over loopback.
@Suite(.timeLimit(.minutes(3))) struct ReceiverPresetTests {
    /// Log lines of every kind: plain, quotes and backslashes, tabs and escape sequences,
    /// multi-byte UTF-8, a line twice in a row (Loki drops an entry equal to one it holds),
    /// blank lines, and (where `invalidUTF8`) bytes that are not UTF-8.
    static func lines(_ count: Int, invalidUTF8: Bool = true) -> [[UInt8]] {
        (0..<count).map { index -> [UInt8] in
            switch index % 8 {
            case 0: Array("plain line \(index)".utf8)
            case 1: Array(#"quoted "\#(index)" and \back\slash {"json":[1]}"#.utf8)
            case 2: Array("tab\there esc \u{1B}[31mred\u{1B}[0m cr\r \(index)".utf8)
            case 3: Array("unicode é 日本語 😀 \(index)".utf8)
            case 4: Array("same line".utf8)
            case 5: Array("same line".utf8)
            case 6: index % 16 == 6 ? [] : Array("   ".utf8)
            default: invalidUTF8 ? [0xFF, 0xFE, 0x20, 0xC3] + Array(" \(index)".utf8) : Array("seven \(index)".utf8)
            }
        }
    }

    /// What a receiver stores of `line`: each ill-formed UTF-8 sequence replaced by one U+FFFD
    /// per maximal subpart (as Swift's decoder does), the presets' default.
    static func stored(_ line: [UInt8]) -> [UInt8] { Array(String(decoding: line, as: UTF8.self).utf8) }

    static func blank(_ line: [UInt8]) -> Bool { line.allSatisfy { $0 == 0x20 || (0x09...0x0D).contains($0) } }

    /// Runs `streamup OPTIONS --to KIND URL` with `lines` on stdin against a validator of
    /// `kind` (started with `validatorOptions`; `path` is added to its URL); returns the exit
    /// status, stderr and what the validator holds.
    static func ship(
        _ kind: String, _ options: [String] = [], lines: [[UInt8]], path: String = "", validatorOptions: [String] = []
    ) async throws -> (status: Int32?, stderr: String, snapshot: ReceiverValidator.Snapshot) {
        try await ReceiverValidator.with(kind, validatorOptions) { validator in
            let child = try StreamupProcess(["--to", kind] + options + [validator.url.absoluteString + path])
            let input = Data(lines.map { $0 + [0x0A] }.joined())
            // A blocking write of megabytes must not hold one of the threads parallel tests share.
            Thread.detachNewThread {
                child.write(input)
                child.closeStdin()
            }
            let status = await child.waitForExit(timeout: 120)
            return (status, child.stderr, try await validator.snapshot())
        }
    }

    /// The lines a request shows (no escapes needed in a failure message).
    private static func show(_ lines: [[UInt8]]) -> String {
        lines.prefix(5).map { String(decoding: $0, as: UTF8.self) }.joined(separator: " | ")
    }

    /// VictoriaLogs JSON stream API
    /// (https://docs.victoriametrics.com/victorialogs/data-ingestion/#json-stream-api):
    /// `/insert/jsonline` is added, records carry `_msg` and `_time`, host and the `--label`s
    /// are stream fields; several segments, every line once.
    @Test func victoriaLogs() async throws {
        let lines = Self.lines(3000)
        let (status, stderr, snapshot) = try await Self.ship("victorialogs", ["--segment-bytes", "50000", "--label", "app=web"], lines: lines)
        #expect(status == 0, "stderr: \(stderr)")
        #expect(snapshot.errors.isEmpty, "\(snapshot.errors.prefix(3))")
        #expect(snapshot.requests > 2)
        // VictoriaLogs drops empty fields, and a record whose _msg is empty gets its default text.
        let expected = lines.map {
            $0.isEmpty ? Array("missing _msg field; see https://docs.victoriametrics.com/victorialogs/keyconcepts/#message-field".utf8) : Self.stored($0)
        }
        #expect(snapshot.holds(expected), "\(Self.show(snapshot.lines))")
        let stream = snapshot.records.first?["_stream"] as? String ?? ""
        #expect(stream.hasPrefix(#"{app="web",host=""#), "\(stream)")
    }

    /// VictoriaLogs takes one never-ending request too (it stores lines while the body is open).
    @Test func victoriaLogsAsOneRequest() async throws {
        let lines = Self.lines(500)
        let (status, stderr, snapshot) = try await Self.ship("victorialogs", ["--single-request"], lines: lines.filter { !$0.isEmpty })
        #expect(status == 0, "stderr: \(stderr)")
        #expect(snapshot.errors.isEmpty && snapshot.requests == 1, "\(snapshot.errors.prefix(3))")
        #expect(snapshot.holds(lines.filter { !$0.isEmpty }.map(Self.stored)))
    }

    /// Loki push API (https://grafana.com/docs/loki/latest/reference/loki-http-api/#ingest-logs):
    /// `{"streams":[{"stream":{labels},"values":[["<ns>","<line>"],…]}]}` per request; equal
    /// lines are both kept (their times differ by a nanosecond); the labels are the `--label`s,
    /// the host and the entry's shard (one of 8).
    @Test func loki() async throws {
        let lines = Self.lines(3000)
        let (status, stderr, snapshot) = try await Self.ship("loki", ["--segment-bytes", "50000", "--label", "app=web"], lines: lines)
        #expect(status == 0, "stderr: \(stderr)")
        #expect(snapshot.errors.isEmpty, "\(snapshot.errors.prefix(3))")
        #expect(snapshot.requests > 2)
        #expect(snapshot.holds(lines.map(Self.stored)), "\(Self.show(snapshot.lines))")
        let labels = snapshot.records.first?["labels"] as? [String: String]
        #expect(labels?["app"] == "web" && labels?["host"] != nil && labels?.count == 3, "\(String(describing: labels))")
        #expect(labels.flatMap { $0["streamup_shard"].flatMap(Int.init) }.map { (0..<8).contains($0) } == true, "\(String(describing: labels))")
    }

    /// Loki stores the valid entries of a request and answers 400 naming the ignored ones:
    /// those are reported, kept with `--dead-letter`, and not sent again; the rest arrives once.
    @Test func lokiIgnoredEntriesAreReportedAndKept() async throws {
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        let lines = (0..<400).map { Array(($0 % 50 == 7 ? "BAD entry \($0)" : "good entry \($0)").utf8) }
        let (status, stderr, snapshot) = try await Self.ship(
            "loki", ["--segment-bytes", "4000", "--dead-letter", work.path], lines: lines, validatorOptions: ["--reject-line-regex", "^BAD"])
        let bad = lines.filter { $0.starts(with: Array("BAD".utf8)) }
        #expect(status == 1, "stderr: \(stderr)")
        #expect(snapshot.errors.isEmpty, "\(snapshot.errors.prefix(3))")
        #expect(snapshot.holds(lines.filter { !$0.starts(with: Array("BAD".utf8)) }))
        // (A push gathers its entries per stream, so Loki refuses them in that order.)
        #expect(
            ReceiverValidator.Snapshot.sorted(snapshot.rejectedLines) == ReceiverValidator.Snapshot.sorted(bad),
            "refused entries were sent again: \(Self.show(snapshot.rejectedLines))")
        #expect(stderr.contains("Loki ignored 2 of") && stderr.contains("the server refused 8 records, kept in \(work.path)"), "\(stderr)")
        #expect(try Self.deadLetterLines(in: work).map { $0.contains("BAD entry") } == Array(repeating: true, count: 8))
    }

    /// Elasticsearch/OpenSearch bulk API
    /// (https://www.elastic.co/guide/en/elasticsearch/reference/8.17/docs-bulk.html): a
    /// `create` action line and an ECS document per line, into `logs-streamup-default` for a
    /// URL without a path, or the index the URL names.
    @Test(arguments: [("elasticsearch", "", "logs-streamup-default"), ("opensearch", "/app-logs", "app-logs")])
    func elasticsearch(name: String, path: String, index: String) async throws {
        let lines = Self.lines(3000)
        let (status, stderr, snapshot) = try await Self.ship(name, ["--segment-bytes", "100000"], lines: lines, path: path)
        #expect(status == 0, "stderr: \(stderr)")
        #expect(snapshot.errors.isEmpty, "\(snapshot.errors.prefix(3))")
        #expect(snapshot.requests > 2)
        #expect(snapshot.holds(lines.map(Self.stored)), "\(Self.show(snapshot.lines))")
        #expect(snapshot.fields["index"]?.values == [index] && snapshot.fields["op"]?.values == ["create"])
        let source = snapshot.records.first?["source"] as? [String: Any]
        #expect(source?["@timestamp"] is String && source?["host.name"] is String, "\(String(describing: source))")
    }

    /// Fluent Bit's elasticsearch input serves only `POST /_bulk` (seen with Fluent Bit 5.1 built
    /// from its source, our trial of 2026-11-25): it refuses the path the preset adds to a bare
    /// URL, `/logs-streamup-default/_bulk`, with `400 error: invalid HTTP endpoint`, and the
    /// line says which URL to use; that URL stores every line.
    @Test func elasticsearchAtFluentBitSaysWhichURLWorks() async throws {
        let lines = Self.lines(200)
        let refused = try await Self.ship("elasticsearch", [], lines: lines, validatorOptions: ["--bulk-path-only"])
        #expect(refused.status == 1, "stderr: \(refused.stderr)")
        let line = refused.stderr.split(separator: "\n").first { $0.contains("invalid HTTP endpoint") }.map(String.init) ?? refused.stderr
        let said = "server answered 400 Bad Request: error: invalid HTTP endpoint; Fluent Bit's elasticsearch input takes only POST /_bulk"
        #expect(line.contains(said), "\(line)")
        #expect(line.contains(/use http:\/\/127\.0\.0\.1:\d+\/_bulk(;|$)/), "\(line)")
        #expect(refused.snapshot.lines.isEmpty)

        let taken = try await Self.ship("elasticsearch", [], lines: lines, path: "/_bulk", validatorOptions: ["--bulk-path-only"])
        #expect(taken.status == 0, "stderr: \(taken.stderr)")
        #expect(taken.snapshot.errors.isEmpty, "\(taken.snapshot.errors.prefix(3))")
        #expect(taken.snapshot.holds(lines.map(Self.stored)), "\(Self.show(taken.snapshot.lines))")
    }

    /// `errors:true` items: the refused documents are reported, kept with `--dead-letter`, and
    /// not sent again; the others are stored once.
    @Test func elasticsearchRefusedDocumentsAreReportedAndKept() async throws {
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        let lines = (0..<600).map { Array(($0 % 100 == 42 ? "BAD document \($0)" : "good document \($0)").utf8) }
        let (status, stderr, snapshot) = try await Self.ship(
            "elasticsearch", ["--segment-bytes", "20000", "--dead-letter", work.path], lines: lines, validatorOptions: ["--reject-regex", "BAD"])
        #expect(status == 1, "stderr: \(stderr)")
        #expect(snapshot.errors.isEmpty, "\(snapshot.errors.prefix(3))")
        #expect(snapshot.holds(lines.filter { !$0.starts(with: Array("BAD".utf8)) }))
        #expect(snapshot.rejectedLines.count == 6, "refused documents were sent again")
        #expect(stderr.contains("Elasticsearch refused 2 of") && stderr.contains("400 document_parsing_exception"), "\(stderr)")
        #expect(try Self.deadLetterLines(in: work).map { $0.contains("BAD document") } == Array(repeating: true, count: 6))
    }

    /// Splunk HEC (https://docs.splunk.com/Documentation/Splunk/9.1.1/Data/FormateventsforHTTPEventCollector):
    /// concatenated events with `Authorization: Splunk <token>`, each request within Splunk
    /// Cloud's 1 MB (the validator's default cap answers 413 past it); blank lines make no event.
    @Test func splunkHEC() async throws {
        let lines = Self.lines(16_000).map { $0.isEmpty ? $0 : $0 + Array(String(repeating: "x", count: 150).utf8) }
        let (status, stderr, snapshot) = try await Self.ship(
            "splunk-hec", ["-H", "Authorization: Splunk secret-token"], lines: lines, validatorOptions: ["--token", "secret-token"])
        #expect(status == 0, "stderr: \(stderr)")
        #expect(snapshot.errors.isEmpty, "\(snapshot.errors.prefix(3))")
        #expect(snapshot.requests >= 3, "\(snapshot.requests) requests for about 3 MB")
        #expect(snapshot.holds(lines.filter { !Self.blank($0) }.map(Self.stored)), "\(Self.show(snapshot.lines))")
        #expect(snapshot.fields["time"]?.types == ["float"] && snapshot.fields["host"]?.types == ["str"])
    }

    /// Splunk code 6 / `invalid-event-number` N, with lines that are HEC events already
    /// (`--format raw`): events before N are indexed, N is reported and kept, the events after
    /// it are sent again and indexed once.
    @Test func splunkInvalidEventIsReportedAndTheRestIndexed() async throws {
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        let lines = (0..<300).map { index in
            Array((index % 100 == 50 ? #"{"time":"soon","event":"bad \#(index)"}"# : #"{"event":"event \#(index)"}"#).utf8)
        }
        let (status, stderr, snapshot) = try await Self.ship(
            "splunk-hec", ["--format", "raw", "-H", "Authorization: Splunk t", "--dead-letter", work.path], lines: lines)
        #expect(status == 1, "stderr: \(stderr)")
        // The validator counts each invalid event as the client's error: exactly those three.
        #expect(snapshot.errors.count == 3 && snapshot.errors.allSatisfy { $0.contains("is not epoch seconds") }, "\(snapshot.errors)")
        #expect(snapshot.holds(text: (0..<300).filter { $0 % 100 != 50 }.map { "event \($0)" }))
        #expect(stderr.contains("Splunk HEC refused event 51 of"), "\(stderr)")
        #expect(try Self.deadLetterLines(in: work) == [50, 150, 250].map { #"{"time":"soon","event":"bad \#($0)"}"# })
    }

    /// OTLP/HTTP (https://opentelemetry.io/docs/specs/otlp/#otlphttp): one binary
    /// `ExportLogsServiceRequest` per request at `/v1/logs` (to a receiver that takes only
    /// protobuf, as VictoriaLogs does), the host and the `--label`s as resource attributes, the
    /// `--field`s as record attributes, every record with its time.
    @Test(.needsOpenTelemetryProto) func otlp() async throws {
        let lines = Self.lines(3000)
        let (status, stderr, snapshot) = try await Self.ship(
            "otlp", ["--segment-bytes", "100000", "--label", "service.name=billing", "--field", "env=prod"], lines: lines,
            validatorOptions: ["--encodings", "protobuf"])
        #expect(status == 0, "stderr: \(stderr)")
        #expect(snapshot.errors.isEmpty, "\(snapshot.errors.prefix(3))")
        #expect(snapshot.requests > 2)
        #expect(snapshot.holds(lines.map(Self.stored)), "\(Self.show(snapshot.lines))")
        let record = snapshot.records.first
        #expect((record?["resource"] as? [String: Any])?["service.name"] as? String == "billing")
        #expect((record?["resource"] as? [String: Any])?["host.name"] is String)
        #expect((record?["attributes"] as? [String: Any])?["env"] as? String == "prod")
    }

    /// OTLP `partial_success` (in the protobuf answer) names no records: the request is kept
    /// whole with the reason, and not sent again (its other records were stored once).
    @Test(.needsOpenTelemetryProto) func otlpPartialSuccessKeepsTheRequest() async throws {
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        let lines = (0..<300).map { Array(($0 == 150 ? "BAD record" : "record \($0)").utf8) }
        let (status, stderr, snapshot) = try await Self.ship(
            "otlp", ["--segment-bytes", "5000", "--dead-letter", work.path], lines: lines,
            validatorOptions: ["--reject-body-regex", "BAD", "--encodings", "protobuf"])
        #expect(status == 1, "stderr: \(stderr)")
        #expect(snapshot.errors.isEmpty, "\(snapshot.errors.prefix(3))")
        #expect(snapshot.holds(lines.filter { $0 != Array("BAD record".utf8) }))
        #expect(snapshot.rejectedLines == [Array("BAD record".utf8)])
        #expect(stderr.contains("the OTLP receiver rejected 1 of") && stderr.contains("without saying which"), "\(stderr)")
        let kept = try Self.deadLetterLines(in: work)
        #expect(kept.contains { $0.contains("BAD record") } && kept.count > 1, "the whole request is kept: \(kept.count) lines")
    }

    /// Datadog logs API (https://docs.datadoghq.com/api/latest/logs/#send-logs): a JSON array
    /// of at most 1,000 logs per request with `DD-API-KEY`; `hostname`, `ddsource`, and the
    /// `--field`s as tags. (The validator cannot hold invalid UTF-8: its size check encodes
    /// strictly; the shape's own test covers those bytes.)
    @Test func datadog() async throws {
        let lines = Self.lines(2500, invalidUTF8: false)
        let (status, stderr, snapshot) = try await Self.ship(
            "datadog", ["-H", "DD-API-KEY: key-1", "--field", "env=prod"], lines: lines, validatorOptions: ["--api-key", "key-1"])
        #expect(status == 0, "stderr: \(stderr)")
        #expect(snapshot.errors.isEmpty, "\(snapshot.errors.prefix(3))")
        #expect(snapshot.requests >= 3, "\(snapshot.requests) requests for 2,500 logs")
        #expect(snapshot.holds(lines.map(Self.stored)), "\(Self.show(snapshot.lines))")
        let record = snapshot.records.first
        #expect(record?["ddsource"] as? String == "streamup" && record?["ddtags"] as? String == "env:prod" && record?["hostname"] is String)
    }

    /// Fluent Bit `http` input (https://docs.fluentbit.io/manual/pipeline/inputs/http): JSON
    /// arrays of `{"date":…,"log":…}` records, the URL path as the tag; 5 MB of lines in
    /// requests within its 4 MiB buffer (past it, it closes the connection without an answer).
    @Test func fluentBit() async throws {
        let lines = Self.lines(28_000).map { $0 + Array(String(repeating: "f", count: 150).utf8) }
        let (status, stderr, snapshot) = try await Self.ship("fluent-bit", [], lines: lines, path: "/app.logs")
        #expect(status == 0, "stderr: \(stderr)")
        #expect(snapshot.errors.isEmpty, "\(snapshot.errors.prefix(3))")
        #expect(snapshot.requests >= 3, "\(snapshot.requests) requests for about 5.6 MB")
        #expect(snapshot.holds(lines.map(Self.stored)), "\(Self.show(snapshot.lines))")
        #expect(snapshot.fields["tag"]?.values == ["app.logs"])
        #expect(((snapshot.records.first?["record"] as? [String: Any])?["date"]) is Double)
    }

    /// Vector `http_server` with its default `bytes` codec
    /// (https://vector.dev/docs/reference/configuration/sources/http_server/): the lines as
    /// they are, one event each.
    @Test func vector() async throws {
        let lines = Self.lines(3000, invalidUTF8: false)
        let (status, stderr, snapshot) = try await Self.ship("vector", ["--segment-bytes", "20000"], lines: lines)
        #expect(status == 0, "stderr: \(stderr)")
        #expect(snapshot.errors.isEmpty, "\(snapshot.errors.prefix(3))")
        #expect(snapshot.requests > 2)
        #expect(snapshot.holds(lines.map(Self.stored)), "\(Self.show(snapshot.lines))")
    }

    /// The lines of every `.body` file in `directory`, in name order.
    static func deadLetterLines(in directory: URL) throws -> [String] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".body") }.sorted()
        return try names.flatMap { name in
            try String(contentsOfFile: directory.appendingPathComponent(name).path, encoding: .utf8).split(separator: "\n").map(String.init)
        }
    }
}

extension Trait where Self == ConditionTrait {
    /// The test's validator decodes protobuf with Python's `opentelemetry-proto`: skipped where
    /// it is missing, except under CI.
    static var needsOpenTelemetryProto: Self {
        .enabled(if: OptionalTool.opentelemetryProto.isAvailable, Comment(rawValue: OptionalTool.opentelemetryProto.skipReason))
    }
}
