import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// Lines cut into records (`LineRecords`): the records depend on the bytes alone, never on
/// where the reads of the input fall.
@Suite struct LineRecordsTests {
    /// Long lines of every kind of byte (control characters, invalid UTF-8, multi-byte
    /// characters, quotes) read in one piece and in random pieces of 1 byte to 5 KiB give the
    /// same records, each within the limit, covering the input exactly.
    @Test(arguments: RecordFormatter.InvalidUTF8.allCases)
    func recordsDoNotDependOnReadBoundaries(invalidUTF8: RecordFormatter.InvalidUTF8) throws {
        let formatter = try RecordFormatter(format: .json, host: "h", maxRecordBytes: 3000, invalidUTF8: invalidUTF8)
        var random = SeededRandom(seed: 11)
        let alphabet: [[UInt8]] = [[0x01], [0xFF], [0xE2, 0x82], Array("日".utf8), Array("😀".utf8), [0x22], Array("ab".utf8)]
        var input: [UInt8] = []
        for _ in 0..<40 {
            let count = Int.random(in: 0...4000, using: &random)
            while input.count < count { input += alphabet[Int.random(in: 0..<alphabet.count, using: &random)] }
            input.append(0x0A)
        }
        input += Array(#"{"an":"object line that fits"}"#.utf8) + [0x0A] + [0x41, 0xE2]  // and an unterminated end
        let time = Date(timeIntervalSince1970: 1_700_000_000)
        func run(_ sizes: () -> Int) -> [LineRecords.Record] {
            var lines = LineRecords(formatter: formatter)
            var records: [LineRecords.Record] = []
            var start = 0
            while start < input.count {
                let end = min(input.count, start + sizes())
                records += input[start..<end].withUnsafeBytes { lines.take($0, from: Int64(start), readAt: time) }
                start = end
            }
            return records + lines.flush(readAt: time)
        }
        let whole = run { input.count }
        let pieces = run { Int.random(in: 1...5000, using: &random) }
        #expect(whole.map(\.bytes) == pieces.map(\.bytes) && whole.map(\.end) == pieces.map(\.end))
        #expect(whole.allSatisfy { $0.bytes.count <= 3001 } && whole.count > 40)
        #expect(whole.first?.start == 0 && whole.last?.end == Int64(input.count) && zip(whole, whole.dropFirst()).allSatisfy { $0.end == $1.start })
    }

    /// Equal records read at the same instant get distinct, increasing Loki times on every
    /// path that makes them (Loki keeps one entry of equal time and line): plain lines, joined
    /// multiline records, and container lines that carry the same time.
    @Test(arguments: [(MultilineRule?.none, ContainerLogFormat?.none), (MultilineRule(.java), nil), (nil, .cri), (MultilineRule(.java), .cri)])
    func equalRecordsGetDistinctLokiTimes(multiline: MultilineRule?, parse: ContainerLogFormat?) throws {
        let formatter = try RecordFormatter(format: .ndjson, shape: .lokiEntry, host: "h")
        let trace = ["2026-11-25 10:00:00 ERROR boom", "java.lang.IllegalStateException: x", "\tat a.B.c(B.java:1)"]
        let lines = parse == .cri ? trace.map { "2026-11-25T10:00:00.000000001Z stderr F " + $0 } : trace
        let input = Array(Array(repeating: lines, count: 3).joined().map { $0 + "\n" }.joined().utf8)
        var records = LineRecords(formatter: formatter, multiline: multiline, parse: parse)
        let time = Date(timeIntervalSince1970: 1_795_000_000)
        let made = input.withUnsafeBytes { records.take($0, from: 0, readAt: time) } + records.flush(readAt: time)
        let times = made.compactMap { record -> Int64? in
            guard let entry = try? JSONSerialization.jsonObject(with: Data(record.bytes)) as? [Any] else { return nil }
            return (entry.first as? String).flatMap { Int64($0) }
        }
        #expect(times.count == made.count && made.count >= 3, "\(made.map { String(decoding: $0.bytes, as: UTF8.self) })")
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "times \(times)")
    }
}
