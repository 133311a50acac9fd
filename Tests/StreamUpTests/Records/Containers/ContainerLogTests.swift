import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// Container runtimes' log lines (`--parse cri|docker`, `ContainerLogLine` inside
/// `LineRecords`): the message becomes the record, pieces of one line are joined, the time is
/// the runtime's, the stream and the path's Kubernetes names become fields.
@Suite struct ContainerLogTests {
    static func take(_ text: String, _ lines: inout LineRecords) -> [LineRecords.Record] {
        Array(text.utf8).withUnsafeBytes { lines.take($0, from: 0, readAt: Date(timeIntervalSince1970: 0)) }
            + lines.flush(readAt: Date(timeIntervalSince1970: 0))
    }

    static func object(_ record: LineRecords.Record) -> [String: String] {
        (try? JSONSerialization.jsonObject(with: Data(record.bytes)) as? [String: String]) ?? [:]
    }

    static func formatter(_ fields: [(name: String, value: String)] = []) throws -> RecordFormatter {
        try RecordFormatter(format: .ndjson, keys: .init(host: nil, path: nil), fields: fields)
    }

    /// CRI: `P` pieces are joined until the `F` piece; the record's time is the runtime's, its
    /// stream a field; the record stands for the source bytes of all its pieces.
    @Test func criPiecesJoinIntoOneRecord() throws {
        let text =
            "2026-11-25T10:00:00.123456789Z stdout P first half \n2026-11-25T10:00:00.200000000Z stdout F and the rest\n"
            + "2026-11-25T10:00:01.5+01:00 stderr F oops\n"
        var lines = LineRecords(formatter: try Self.formatter(), parse: .cri) { stream in try? Self.formatter([(name: "stream", value: stream)]) }
        let records = Self.take(text, &lines)
        #expect(
            records.map(Self.object) == [
                ["message": "first half and the rest", "time": "2026-11-25T10:00:00.123Z", "stream": "stdout"],
                ["message": "oops", "time": "2026-11-25T09:00:01.500Z", "stream": "stderr"],
            ])
        let firstEnd = Int64(text.utf8.count - "2026-11-25T10:00:01.5+01:00 stderr F oops\n".utf8.count)
        #expect(records.map(\.start) == [0, firstEnd] && records.map(\.end) == [firstEnd, Int64(text.utf8.count)])
    }

    /// Docker json-file: pieces without a final `\n` are joined; the message loses its `\n`.
    @Test func dockerPiecesJoinIntoOneRecord() throws {
        let text =
            #"{"log":"part one, ","stream":"stdout","time":"2026-11-25T10:00:00.5Z"}"# + "\n"
            + #"{"log":"part two\n","stream":"stdout","time":"2026-11-25T10:00:00.6Z"}"# + "\n"
            + #"{"log":"\tat x\n","stream":"stderr","time":"2026-11-25T10:00:00.7Z"}"# + "\n"
        var lines = LineRecords(formatter: try Self.formatter(), parse: .docker) { stream in try? Self.formatter([(name: "stream", value: stream)]) }
        #expect(
            Self.take(text, &lines).map(Self.object) == [
                ["message": "part one, part two", "time": "2026-11-25T10:00:00.500Z", "stream": "stdout"],
                ["message": "\tat x", "time": "2026-11-25T10:00:00.700Z", "stream": "stderr"],
            ])
    }

    /// With multiline, the joined messages are what the joiner sees: a Java trace written as
    /// CRI lines (one of them in two pieces) is one record.
    @Test func multilineSeesTheMessages() throws {
        let trace = ["java.lang.IllegalStateException: boom", "\tat a.B.c(B.java:1)", "\tat a.B.d(B.java:2)"]
        var text = "2026-11-25T10:00:00Z stdout F " + trace[0] + "\n"
        text += "2026-11-25T10:00:00Z stdout P \tat a.B.c\n2026-11-25T10:00:00Z stdout F (B.java:1)\n"
        text += "2026-11-25T10:00:00Z stdout F " + trace[2] + "\n2026-11-25T10:00:01Z stdout F next\n"
        var lines = LineRecords(formatter: try Self.formatter(), multiline: MultilineRule(.java), parse: .cri)
        let records = Self.take(text, &lines)
        #expect(records.map { Self.object($0)["message"] } == [trace.joined(separator: "\n"), "next"])
    }

    /// The Kubernetes names in both path layouts.
    @Test func namesFromThePath() {
        let pods = ContainerPath.fields(of: "/var/log/pods/shop_web-7f9c5_0b1c-22de/nginx/0.log")
        #expect(pods.map(\.name) == ["namespace", "pod", "container"] && pods.map(\.value) == ["shop", "web-7f9c5", "nginx"])
        let containers = ContainerPath.fields(of: "/var/log/containers/web-7f9c5_shop_nginx-" + String(repeating: "a", count: 64) + ".log")
        #expect(containers.map(\.value) == ["shop", "web-7f9c5", "nginx"])
        #expect(ContainerPath.fields(of: "/var/log/app.log").isEmpty)
    }
}
