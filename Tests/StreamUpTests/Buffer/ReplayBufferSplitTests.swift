import Testing

@testable import StreamUp

/// Records longer than `maxRecord` are split at the same points whether the long line comes in
/// pieces or in one write together with its newline.
@Suite struct ReplayBufferSplitTests {
    private func write(_ text: String, to buffer: ReplayBuffer) throws {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let outcome = try buffer.withWritableSpace(maxLength: bytes.count, mark: nil) { space in
                bytes.withUnsafeBytes { space.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[..<space.count])) }
                return space.count
            }
            guard let count = outcome else {
                Issue.record("not written: \(outcome)")
                return
            }
            bytes = bytes.dropFirst(count)
        }
    }

    /// A 250-byte line with its newline in one write, limit 100: split at 100 and 200 (from the
    /// record's start), as when the line grows a byte at a time.
    @Test func aLongLineInOneWriteIsSplitLikeOneInPieces() throws {
        let line = "ab\n" + String(repeating: "y", count: 249) + "\n" + "cd\n"
        let whole = ReplayBuffer(capacity: 4096, records: .lines, maxRecord: 100)
        try write(line, to: whole)
        let pieces = ReplayBuffer(capacity: 4096, records: .lines, maxRecord: 100)
        for character in line { try write(String(character), to: pieces) }
        let (wholeSplits, piecesSplits) = (whole.withState { $0.splits }, pieces.withState { $0.splits })
        #expect(wholeSplits == [103, 203])
        #expect(piecesSplits == wholeSplits)
        #expect(whole.splitRecords == 2)
        #expect(whole.withState { $0.boundary } == line.utf8.count)
    }

    /// Many short lines in one write, more than `maxRecord` in all: nothing is split.
    @Test func shortLinesAreNeverSplit() throws {
        let buffer = ReplayBuffer(capacity: 1 << 16, records: .lines, maxRecord: 100)
        try write(String(repeating: String(repeating: "s", count: 99) + "\n", count: 300), to: buffer)
        #expect(buffer.withState { $0.splits }.isEmpty)
        #expect(buffer.splitRecords == 0)
    }

    /// A record that started in an earlier write (no newline yet) and ends in this one counts
    /// its earlier bytes too.
    @Test func aRecordStartedEarlierCountsItsEarlierBytes() throws {
        let buffer = ReplayBuffer(capacity: 4096, records: .lines, maxRecord: 100)
        try write(String(repeating: "p", count: 60), to: buffer)
        try write(String(repeating: "q", count: 60) + "\nshort\n", to: buffer)
        #expect(buffer.withState { $0.splits } == [100])
    }
}
