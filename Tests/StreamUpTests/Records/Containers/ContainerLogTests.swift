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

    /// With a state file's source times (`tail --state`), a container record's time follows
    /// from the runtime's time and the record's source offset alone, and so does its name: read
    /// again from any record's start by a new process (the bases the first one made loaded, its
    /// clock an hour later), the records are the very bytes and names the first run made from
    /// there on. The first record's time is the runtime's to the nanosecond; equal lines of one
    /// runtime time are 1 ns a byte apart; a runtime time more than 10 ms on starts a new base.
    @Test(arguments: ContainerLogFormat.allCases)
    func recordsReadAgainFromASavedPositionKeepTheirTimesAndNames(format: ContainerLogFormat) throws {
        let source = SourceID(device: 1, inode: 2, fingerprint: 3)
        func line(_ time: String, _ stream: String, _ message: String, last: Bool = true) -> String {
            switch format {
            case .cri: "\(time) \(stream) \(last ? "F" : "P") \(message)\n"
            case .docker: #"{"log":"\#(message)\#(last ? "\\n" : "")","stream":"\#(stream)","time":"\#(time)"}"# + "\n"
            }
        }
        let first = "2026-11-25T10:00:00.123456789Z"
        let later = "2026-11-25T10:00:00.500000001Z"
        var text = Array(repeating: line(first, "stdout", "same line"), count: 4).joined()
        text += line(first, "stderr", "a long ", last: false) + line(first, "stderr", "line")
        text += Array(repeating: line(first, "stdout", "same line"), count: 3).joined()
        text += line(later, "stdout", "later") + line(later, "stdout", "same line")
        let bytes = Array(text.utf8)

        /// The records from `position` on, their Loki times and their names.
        func read(from position: Int64, times: SourceTimes, readAt: Date) throws -> (records: [LineRecords.Record], times: [Int64], names: [String]) {
            var formatter = try RecordFormatter(format: .ndjson, shape: .lokiEntry, host: "h")
            formatter.sourceTimes = (times, source)
            var lines = LineRecords(formatter: formatter, parse: format) { stream in
                try? RecordFormatter(format: .ndjson, shape: .lokiEntry, host: "h", fields: [(name: "stream", value: stream)])
            }
            let records =
                bytes[Int(position)...].withUnsafeBytes { lines.take($0, from: position, readAt: readAt) } + lines.flush(readAt: readAt)
            var entries: [SourceIndex.Entry] = []
            for record in records {
                let offset = entries.last?.streamEnd ?? 0
                entries.append(
                    SourceIndex.Entry(
                        streamStart: offset, streamEnd: offset + record.bytes.count, source: source, start: record.start, end: record.end, verbatim: false))
            }
            let names = RecordNames(entries: entries, times: times)
            let recordTimes = records.map { record in
                ((try? JSONSerialization.jsonObject(with: Data(record.bytes)) as? [Any])?.first as? String).flatMap { Int64($0) } ?? -1
            }
            return (records, recordTimes, entries.map { names.name(at: $0.streamStart).map { String(decoding: $0, as: UTF8.self) } ?? "none" })
        }

        let times = SourceTimes()
        let run = try read(from: 0, times: times, readAt: Date(timeIntervalSince1970: 1_800_000_000))
        let runtime: Int64 = 1_795_600_800_123_456_789
        #expect(run.records.count == 10 && run.times.first == runtime, "\(run.times)")
        #expect(zip(run.times, run.times.dropFirst()).allSatisfy { $0 < $1 }, "\(run.times)")
        #expect(run.times[1] - run.times[0] == run.records[1].start - run.records[0].start)
        #expect(run.times[8] == 1_795_600_800_500_000_001, "\(run.times)")
        #expect(Set(run.names).count == 10 && !run.names.contains("none"), "\(run.names)")
        let saved = times.snapshot()
        for restart in run.records.map(\.start) {
            let again = SourceTimes(loaded: saved, positions: [SourcePosition(source: source, path: "/0.log", offset: restart)])
            let rerun = try read(from: restart, times: again, readAt: Date(timeIntervalSince1970: 1_800_003_600))
            let expected = run.records.indices.filter { run.records[$0].start >= restart }
            #expect(rerun.records.map(\.bytes) == expected.map { run.records[$0].bytes }, "from \(restart): \(rerun.times) for \(run.times)")
            #expect(rerun.names == expected.map { run.names[$0] }, "from \(restart)")
        }
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
