import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// Lines joined into multiline records (`MultilineJoiner`, and `LineRecords` around it): which
/// lines make one record, when a held record goes out (timeouts on a `ManualClock`), and the
/// source range each record stands for.
@Suite struct MultilineJoinerTests {
    /// Feeds `lines` (each ending in `\n` in the source) at `clock`'s time; returns the records
    /// and the joiner (holding the last one).
    static func feed(_ lines: [String], _ joiner: inout MultilineJoiner, clock: ManualClock, from position: Int64 = 0) -> [MultilineJoiner.Joined] {
        var records: [MultilineJoiner.Joined] = []
        var start = position
        for line in lines {
            let bytes = Array(line.utf8)
            let end = start + Int64(bytes.count) + 1
            if let done = bytes.withUnsafeBytes({ joiner.add($0, start: start, end: end, at: clock.now.offset) }) { records.append(done) }
            start = end
        }
        return records
    }

    static func text(_ joined: MultilineJoiner.Joined?) -> String? {
        joined.map { String(decoding: $0.bytes, as: UTF8.self) }
    }

    static func javaTrace(frames: Int) -> [String] {
        var lines = ["2026-11-25 10:00:00 ERROR request failed", "java.lang.IllegalStateException: boom"]
        for frame in 0..<frames { lines.append("\tat com.example.Service.call\(frame)(Service.java:\(frame + 1))") }
        lines += ["Caused by: java.io.IOException: disk", "\tat com.example.Disk.write(Disk.java:7)", "\t... 12 more"]
        return lines
    }

    /// A 200-frame Java trace (message line, exception, frames, a cause) is one record, with
    /// the newlines inside; the next log line starts the next record, and the source range is
    /// exactly the trace's lines.
    @Test func javaTraceIsOneRecord() {
        let clock = ManualClock()
        var joiner = MultilineJoiner(MultilineRule(.java), maxBytes: 1 << 20)
        let trace = Self.javaTrace(frames: 200)
        let records = Self.feed(["2026-11-25 09:59:59 INFO started"] + trace + ["2026-11-25 10:00:01 INFO next"], &joiner, clock: clock)
        #expect(records.count == 2)
        #expect(Self.text(records.first) == "2026-11-25 09:59:59 INFO started")
        #expect(Self.text(records.last) == trace.joined(separator: "\n"))
        #expect(records.last?.lines == 205)
        let traceStart = Int64("2026-11-25 09:59:59 INFO started\n".utf8.count)
        #expect(records.last?.start == traceStart)
        #expect(records.last?.end == traceStart + Int64(trace.joined(separator: "\n").utf8.count + 1))
        #expect(Self.text(joiner.flush()) == "2026-11-25 10:00:01 INFO next")
    }

    /// A held record goes out once the timeout passes without a continuation, not before; a
    /// continuation moves the deadline.
    @Test func timeoutEndsAHeldRecord() {
        let clock = ManualClock()
        var joiner = MultilineJoiner(MultilineRule(.indented, timeout: .seconds(1)), maxBytes: 1 << 20)
        #expect(Self.feed(["first", "  more"], &joiner, clock: clock).isEmpty)
        #expect(joiner.deadline == .seconds(1))
        clock.advance(by: .milliseconds(600))
        #expect(joiner.expire(at: clock.now.offset) == nil)
        #expect(Self.feed(["  and more"], &joiner, clock: clock, from: 13).isEmpty)
        clock.advance(by: .milliseconds(999))
        #expect(joiner.expire(at: clock.now.offset) == nil)
        clock.advance(by: .milliseconds(1))
        let expired = joiner.expire(at: clock.now.offset)
        #expect(Self.text(expired) == "first\n  more\n  and more")
        #expect(expired?.start == 0 && expired?.end == 24)
        #expect(joiner.deadline == nil && !joiner.isHolding)
    }

    /// `--multiline-max-lines` and the byte limit end a record: the next line starts another.
    @Test func limitsEndARecord() {
        let clock = ManualClock()
        var byLines = MultilineJoiner(MultilineRule(.indented, maxLines: 3), maxBytes: 1 << 20)
        let records = Self.feed(["a", " 1", " 2", " 3", " 4"], &byLines, clock: clock)
        #expect(records.map(Self.text) == ["a\n 1\n 2"])
        #expect(Self.text(byLines.flush()) == " 3\n 4")
        var byBytes = MultilineJoiner(MultilineRule(.indented), maxBytes: 8)
        #expect(Self.feed(["abc", " de", " fg"], &byBytes, clock: clock).map(Self.text) == ["abc\n de"])
    }

    /// `start=REGEX`: a matching line starts a record, others continue it; a first line that
    /// does not match is a record of its own start.
    @Test func startPattern() throws {
        let clock = ManualClock()
        var joiner = MultilineJoiner(try MultilineRule(parsing: #"start=^\d{4}-\d\d-\d\d "#), maxBytes: 1 << 20)
        let records = Self.feed(["orphan", "x", "2026-11-25 a", "b", "c", "2026-11-25 d"], &joiner, clock: clock)
        #expect(records.map(Self.text) == ["orphan\nx", "2026-11-25 a\nb\nc"])
        #expect(throws: StreamUpError.self) { try MultilineRule(parsing: "start=(") }
        #expect(throws: StreamUpError.self) { try MultilineRule(parsing: "ruby") }
    }

    /// Python: a logged message with its traceback, a chained traceback and the exception
    /// lines are one record; the next log line is not.
    @Test func pythonTraceback() {
        let clock = ManualClock()
        var joiner = MultilineJoiner(MultilineRule(.python), maxBytes: 1 << 20)
        let trace = [
            "ERROR:root:failed", "Traceback (most recent call last):", "  File \"a.py\", line 3, in <module>", "    f()",
            "KeyError: 'x'", "", "During handling of the above exception, another exception occurred:", "",
            "Traceback (most recent call last):", "  File \"a.py\", line 5, in <module>", "ValueError: bad",
        ]
        let records = Self.feed(trace + ["INFO:root:next", "INFO:root:after"], &joiner, clock: clock)
        #expect(records.map(Self.text) == [trace.joined(separator: "\n"), "INFO:root:next"])
    }

    /// Go: a panic and its goroutine dump (function lines are not indented, blank lines
    /// between goroutines) are one record.
    @Test func goPanic() {
        let clock = ManualClock()
        var joiner = MultilineJoiner(MultilineRule(.go), maxBytes: 1 << 20)
        let trace = [
            "panic: runtime error: index out of range [5] with length 3", "", "goroutine 1 [running]:", "main.main()",
            "\t/tmp/x.go:8 +0x1d", "", "goroutine 7 [chan receive]:", "main.worker(0xc000010000)", "\t/tmp/x.go:20 +0x2a",
            "created by main.main in goroutine 1", "\t/tmp/x.go:6 +0x45", "exit status 2",
        ]
        let records = Self.feed(["2026/11/25 10:00:00 serving"] + trace + ["2026/11/25 10:00:05 restarted"], &joiner, clock: clock)
        #expect(records.map(Self.text) == ["2026/11/25 10:00:00 serving", trace.joined(separator: "\n")])
    }

    /// Through `LineRecords` with a JSON formatter: the joined record is one JSON message with
    /// `\n` inside, whatever the read boundaries, marked with the source range of its lines.
    @Test func lineRecordsJoinIntoOneMessage() throws {
        let formatter = try RecordFormatter(format: .ndjson, keys: .init(time: nil, host: nil, path: nil), maxRecordBytes: 1 << 20)
        let input = Array((["INFO start"] + Self.javaTrace(frames: 200) + ["INFO end"]).map { $0 + "\n" }.joined().utf8)
        let time = Date(timeIntervalSince1970: 0)
        var random = SeededRandom(seed: 5)
        var records: [LineRecords.Record] = []
        var lines = LineRecords(formatter: formatter, multiline: MultilineRule(.java))
        var start = 0
        while start < input.count {
            let end = min(input.count, start + Int.random(in: 1...700, using: &random))
            records += input[start..<end].withUnsafeBytes { lines.take($0, from: Int64(start), readAt: time, now: .zero) }
            start = end
        }
        #expect(lines.deadline == .seconds(1))
        records += lines.flush(readAt: time)
        let traceRecords = records.filter { $0.start == 11 }
        #expect(traceRecords.count == 1 && traceRecords.allSatisfy { $0.end == Int64(input.count) - 9 })
        #expect(records.first.map { String(decoding: $0.bytes, as: UTF8.self) } == "{\"message\":\"INFO start\"}\n")
        let message = traceRecords.map { piece -> String in
            let object = try! JSONSerialization.jsonObject(with: Data(piece.bytes)) as! [String: String]
            return object["message"]!
        }.joined()
        #expect(message == Self.javaTrace(frames: 200).joined(separator: "\n"))
        #expect(records.last.map { String(decoding: $0.bytes, as: UTF8.self) } == "{\"message\":\"INFO end\"}\n")
        #expect(records.last?.end == Int64(input.count))
    }
}
