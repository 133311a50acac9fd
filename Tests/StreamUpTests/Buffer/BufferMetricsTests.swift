import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// What the replay buffer tells `--metrics`: how many lines were read, and how old the oldest
/// unacknowledged byte is.
@Suite struct BufferMetricsTests {
    /// The word-at-a-time count agrees with a byte-by-byte one, at every alignment and length,
    /// on bytes dense with newlines and with bytes that differ from `\n` by one bit.
    @Test func newlinesAreCountedExactly() {
        var random = SeededRandom()
        let alphabet: [UInt8] = [0x0A, 0x0B, 0x08, 0x8A, 0x00, 0xFF, 0x2A]
        for length in 0..<80 {
            let bytes = (0..<(length + 7)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
            for start in 0..<7 {
                let piece = bytes[start..<(start + length)]
                let counted = piece.withUnsafeBytes { ReplayBuffer.newlineCount(in: $0) }
                #expect(counted == piece.filter { $0 == 0x0A }.count, "length \(length) at \(start), \(random)")
            }
        }
        // Past the 255 words one sum holds, all newlines and then random bytes.
        for bytes in [[UInt8](repeating: 0x0A, count: 255 * 8 * 3 + 5), (0..<(255 * 8 * 2 + 13)).map { _ in UInt8(truncatingIfNeeded: random.next()) }] {
            #expect(bytes.withUnsafeBytes { ReplayBuffer.newlineCount(in: $0) } == bytes.filter { $0 == 0x0A }.count, "\(random)")
        }
    }

    /// Lines are counted as they are written, across writes that split them; opaque bytes
    /// (`--records none`) count none.
    @Test func linesWrittenAreCounted() async throws {
        let buffer = ReplayBuffer(capacity: 1_024, records: .lines)
        let writer = StreamWriter(buffer: buffer)
        try await writer.write(Array("one\ntw".utf8))
        try await writer.write(Array("o\nthree\n\n".utf8))
        #expect(buffer.linesWritten == 4)
        let raw = ReplayBuffer(capacity: 1_024, records: .rawBytes)
        try await StreamWriter(buffer: raw).write(Array("one\ntwo\n".utf8))
        #expect(raw.linesWritten == 0)
    }

    /// The age of the oldest held byte: from its write, zero once everything is acknowledged,
    /// and the next held byte's once the first is.
    @Test func theOldestUnacknowledgedByteHasAnAge() async throws {
        let buffer = ReplayBuffer(capacity: 1_024, records: .lines)
        let writer = StreamWriter(buffer: buffer)
        #expect(buffer.oldestHeldAge() == .zero)
        let before = ContinuousClock.now
        try await writer.write(Array("first\n".utf8))
        let after = ContinuousClock.now
        let age = buffer.oldestHeldAge(now: after + .seconds(5))
        #expect(age >= .seconds(5) && age <= after + .seconds(5) - before + WriteTimes.granularity, "\(age)")
        buffer.acknowledge(upTo: 6)
        #expect(buffer.oldestHeldAge(now: after + .seconds(5)) == .zero)
    }

    /// Marks: one per `granularity` at most; a byte is dated by the last mark at or below it;
    /// acknowledged marks go; at the limit every other one goes, the first kept.
    @Test func writeTimesDateEachByteByItsMark() {
        let start = ContinuousClock.now
        var times = WriteTimes()
        times.wrote(at: 0, time: start)
        times.wrote(at: 10, time: start + .milliseconds(50))  // within the granularity: no mark
        times.wrote(at: 20, time: start + .seconds(1))
        #expect(times.marks.map(\.offset) == [0, 20])
        #expect(times.time(of: 15) == start && times.time(of: 20) == start + .seconds(1))
        times.acknowledge(upTo: 25)
        #expect(times.marks.map(\.offset) == [20])
        var many = WriteTimes()
        for index in 0..<WriteTimes.limit { many.wrote(at: index, time: start + .seconds(index)) }
        many.wrote(at: WriteTimes.limit, time: start + .seconds(WriteTimes.limit))
        #expect(many.marks.count == WriteTimes.limit / 2 + 1 && many.marks.first?.offset == 0 && many.marks.last?.offset == WriteTimes.limit)
    }
}
