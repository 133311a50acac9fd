import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// The receivers' record shapes: every record parses as the receiver's schema says (checked by
/// Python's `json`, see `ShapeCheck`), the line comes back byte for byte whatever its bytes, and
/// each shape puts time, host, path and fields where its receiver reads them.
@Suite struct RecordShapeTests {
    /// The one record `shape` makes of `line`, as Python re-serializes it (sorted keys).
    private func canonical(
        _ shape: RecordShape, host: String = "web-1", path: String? = "/var/log/app.log", fields: [(name: String, value: String)] = [], _ line: String = "hello"
    ) async throws -> String {
        var formatter = try RecordFormatter(format: .ndjson, shape: shape, host: host, path: path, fields: fields)
        let checked = try await ShapeCheck.check(records(&formatter, [Array(line.utf8)]), shape: shape)
        let record = try #require(checked.first)
        #expect(record.problems.isEmpty, "\(record.problems)")
        return record.canonical
    }

    /// Every shape: each of thousands of lines of every kind of byte (invalid UTF-8, controls,
    /// quotes) gives a record of the receiver's schema whose line decodes back to exactly its
    /// bytes; with a path and fields too.
    @Test(arguments: RecordShape.allCases)
    func everyRecordFitsTheSchemaAndTheLineRoundTrips(shape: RecordShape) async throws {
        var formatter = try RecordFormatter(
            format: .ndjson, shape: shape, host: "h", path: "/p", fields: [("env", "prod"), ("t\u{1}", "v\"\\")], invalidUTF8: .surrogateEscape)
        let blank = { (line: [UInt8]) in line.allSatisfy { $0 == 0x20 || (0x09...0x0D).contains($0) } }
        let lines = RecordFormatterTests.trickyLines().filter { shape != .splunkEvent || !blank($0) }
        let checked = try await ShapeCheck.check(records(&formatter, lines), shape: shape)
        try #require(checked.count == lines.count)
        for (line, record) in zip(lines, checked) {
            #expect(record.problems.isEmpty, "line \(line): \(record.problems)")
            #expect(record.message == line, "line \(line) came back as \(record.message ?? [])")
        }
    }

    /// Loki: `[ns, line]` with the path and fields as structured metadata (none: two elements);
    /// the host only when it is another machine's (a journal entry's), for the envelope to make
    /// it the stream's label.
    @Test func lokiEntries() async throws {
        let here = RecordFormatter.localHostName()
        #expect(try await canonical(.lokiEntry, host: here) == #"["1700000000123000000", "hello", {"filename": "/var/log/app.log"}]"#)
        #expect(try await canonical(.lokiEntry, host: here, path: nil) == #"["1700000000123000000", "hello"]"#)
        #expect(try await canonical(.lokiEntry, host: here, path: nil, fields: [("env", "prod")]) == #"["1700000000123000000", "hello", {"env": "prod"}]"#)
        #expect(try await canonical(.lokiEntry, host: "web-1", path: nil) == #"["1700000000123000000", "hello", {"host": "web-1"}]"#)
    }

    /// OTLP: both times in nanoseconds (int64 as strings), the body a string, the path and the
    /// fields as string attributes.
    @Test func otlpLogRecords() async throws {
        #expect(
            try await canonical(.otlpLogRecord, fields: [("env", "prod")])
                == #"{"attributes": [{"key": "log.file.path", "value": {"stringValue": "/var/log/app.log"}}, {"key": "env", "value": {"stringValue": "prod"}}], "body": {"stringValue": "hello"}, "observedTimeUnixNano": "1700000000123000000", "timeUnixNano": "1700000000123000000"}"#
        )
        #expect(
            try await canonical(.otlpLogRecord, path: nil)
                == #"{"body": {"stringValue": "hello"}, "observedTimeUnixNano": "1700000000123000000", "timeUnixNano": "1700000000123000000"}"#)
    }

    /// Splunk: epoch seconds with milliseconds, host, the path as source, the line as event;
    /// fields named like HEC metadata set it, the rest are indexed fields.
    @Test func splunkEvents() async throws {
        #expect(
            try await canonical(.splunkEvent, fields: [("sourcetype", "app"), ("index", "main"), ("env", "prod"), ("host", "set")])
                == #"{"event": "hello", "fields": {"env": "prod"}, "host": "set", "index": "main", "source": "/var/log/app.log", "sourcetype": "app", "time": 1700000000.123}"#
        )
        #expect(try await canonical(.splunkEvent, path: nil) == #"{"event": "hello", "host": "web-1", "time": 1700000000.123}"#)
    }

    /// Splunk refuses a blank event (and stops the request there), so a line that is empty
    /// or only white space makes no Splunk event; other shapes keep such lines.
    @Test func blankLinesMakeNoSplunkEvent() async throws {
        var splunk = try RecordFormatter(format: .ndjson, shape: .splunkEvent, host: "h")
        let lines: [[UInt8]] = [[], Array(" \t\r".utf8), Array("x".utf8), [0x0B, 0x0C], Array(" y ".utf8)]
        let checked = try await ShapeCheck.check(records(&splunk, lines), shape: .splunkEvent)
        #expect(checked.map(\.message) == [Array("x".utf8), Array(" y ".utf8)])
        var loki = try RecordFormatter(format: .ndjson, shape: .lokiEntry, host: "h")
        #expect(try await ShapeCheck.check(records(&loki, lines), shape: .lokiEntry).count == lines.count)
    }

    /// Datadog: `date`, `hostname`, `ddsource` (streamup unless set), `service` when given, the
    /// other fields as tags after a given `ddtags`.
    @Test func datadogLogs() async throws {
        #expect(
            try await canonical(.datadogLog, fields: [("env", "prod"), ("service", "billing"), ("ddtags", "team:a"), ("zone", "x")])
                == #"{"date": "2023-11-14T22:13:20.123Z", "ddsource": "streamup", "ddtags": "team:a,env:prod,zone:x", "hostname": "web-1", "message": "hello", "path": "/var/log/app.log", "service": "billing"}"#
        )
        #expect(
            try await canonical(.datadogLog, path: nil, fields: [("ddsource", "nginx")])
                == #"{"date": "2023-11-14T22:13:20.123Z", "ddsource": "nginx", "hostname": "web-1", "message": "hello"}"#)
    }

    /// Fluent Bit, Elasticsearch (ECS names) and ClickHouse: flat objects with their receivers'
    /// names and time forms.
    @Test func flatShapes() async throws {
        #expect(try await canonical(.fluentBitRecord) == #"{"date": 1700000000.123, "host": "web-1", "log": "hello", "path": "/var/log/app.log"}"#)
        #expect(
            try await canonical(.elasticsearchDocument, fields: [("env", "prod")])
                == #"{"@timestamp": "2023-11-14T22:13:20.123Z", "env": "prod", "host.name": "web-1", "log.file.path": "/var/log/app.log", "message": "hello"}"#)
        #expect(try await canonical(.clickHouseRow, path: nil) == #"{"host": "web-1", "message": "hello", "time": 1700000000}"#)
    }

    /// Nanosecond times are unique and increasing per formatter: lines of one millisecond, and
    /// a clock that stepped back, get the previous time plus 1 ns; a later time is its own.
    @Test func nanosecondTimesAreUniqueAndIncreasing() throws {
        var formatter = try RecordFormatter(format: .ndjson, shape: .lokiEntry, host: "h")
        var output = records(&formatter, [Array("a".utf8), Array("a".utf8)], at: recordsReadAt)
        output += records(&formatter, [Array("a".utf8)], at: recordsReadAt - 5000)
        output += records(&formatter, [Array("a".utf8)], at: recordsReadAt + 1)
        let times = String(decoding: output, as: UTF8.self).split(separator: "\n").map { $0.split(separator: "\"")[1] }
        #expect(times == ["1700000000123000000", "1700000000123000001", "1700000000123000002", "1700000000124000000"])
    }

    /// Seconds with milliseconds and whole seconds round toward the past before 1970 too.
    @Test func secondsBeforeAndAfter1970() throws {
        var fluent = try RecordFormatter(format: .ndjson, shape: .fluentBitRecord, keys: .init(message: "log", time: "date", host: nil))
        var clickHouse = try RecordFormatter(format: .ndjson, shape: .clickHouseRow, keys: .init(host: nil))
        let line = [Array("x".utf8)]
        #expect(
            String(decoding: records(&fluent, line, at: -1) + records(&fluent, line, at: 5), as: UTF8.self)
                == #"{"date":-1.999,"log":"x"}"# + "\n" + #"{"date":0.005,"log":"x"}"# + "\n")
        #expect(
            String(decoding: records(&clickHouse, line, at: -1) + records(&clickHouse, line, at: 1999), as: UTF8.self)
                == #"{"time":-1,"message":"x"}"# + "\n" + #"{"time":1,"message":"x"}"# + "\n")
    }

    /// `--format json`: the flat shapes merge a JSON object line's own members (its own keys
    /// win); the others carry such a line as their message string.
    @Test func jsonObjectsMergeOnlyIntoFlatShapes() async throws {
        let line = [Array(#"{"level":"info","message":"mine"}"#.utf8)]
        var elasticsearch = try RecordFormatter(format: .json, shape: .elasticsearchDocument, host: "h")
        #expect(
            String(decoding: records(&elasticsearch, line), as: UTF8.self)
                == #"{"@timestamp":"2023-11-14T22:13:20.123Z","host.name":"h","level":"info","message":"mine"}"# + "\n")
        var fluent = try RecordFormatter(format: .json, shape: .fluentBitRecord, host: "h")
        #expect(
            String(decoding: records(&fluent, line), as: UTF8.self)
                == #"{"date":1700000000.123,"host":"h","level":"info","message":"mine"}"# + "\n")
        for shape in RecordShape.allCases where !shape.mergesJSONObjects {
            var formatter = try RecordFormatter(format: .json, shape: shape, host: "h")
            let checked = try await ShapeCheck.check(records(&formatter, line), shape: shape)
            #expect(checked.first?.message == line[0], "\(shape)")
        }
    }

    /// A field that takes the message's key is refused in the flat shapes; in Splunk's it is
    /// an indexed field like any other.
    @Test func aFieldNamedLikeTheMessageIsRefusedWhereItWouldCollide() async throws {
        #expect(throws: StreamUpError.self) { try RecordFormatter(format: .ndjson, shape: .fluentBitRecord, fields: [("log", "x")]) }
        #expect(throws: StreamUpError.self) { try RecordFormatter(format: .ndjson, shape: .elasticsearchDocument, fields: [("message", "x")]) }
        #expect(
            try await canonical(.splunkEvent, path: nil, fields: [("event", "x")])
                == #"{"event": "hello", "fields": {"event": "x"}, "host": "web-1", "time": 1700000000.123}"#)
    }

    /// No record is longer than `maxRecordBytes`, escapes included, however long the line and
    /// whatever its bytes (control characters take six bytes each, invalid bytes three or six):
    /// a long line is cut into records that each fit, and its pieces put together are the line.
    @Test(arguments: RecordShape.allCases, RecordFormatter.InvalidUTF8.allCases)
    func noRecordIsLongerThanTheLimit(shape: RecordShape, invalidUTF8: RecordFormatter.InvalidUTF8) async throws {
        let formatter = try RecordFormatter(
            format: .ndjson, shape: shape, host: String(repeating: "h", count: 300), path: "/p", fields: [("env", "prod")],
            maxRecordBytes: 2000, invalidUTF8: invalidUTF8)
        var random = SeededRandom(seed: 7)
        let worst: [[UInt8]] = [
            [UInt8](repeating: 0x01, count: 5000), [UInt8](repeating: 0xFF, count: 5000), Array(String(repeating: "日本😀", count: 700).utf8),
            (0..<5000).map { _ in UInt8.random(in: 0...0xFF, using: &random) }.map { $0 == 0x0A ? 0x20 : $0 },
        ]
        for line in worst {
            var lines = LineRecords(formatter: formatter)
            let records = (line + [0x0A]).withUnsafeBytes { lines.take($0, from: 0, readAt: Date()) }
            #expect(records.count > 1 && records.allSatisfy { $0.bytes.count <= 2001 }, "\(records.map(\.bytes.count))")
            let checked = try await ShapeCheck.check(records.flatMap(\.bytes), shape: shape)
            let message = checked.flatMap { $0.message ?? [] }
            let expected = invalidUTF8 == .surrogateEscape ? line : Array(String(decoding: line, as: UTF8.self).utf8)
            #expect(message == expected)
            #expect(records.last?.end == Int64(line.count + 1) && zip(records, records.dropFirst()).allSatisfy { $0.end == $1.start })
        }
    }
}
