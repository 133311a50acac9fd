import StreamUp
import StreamUpJournal
import Testing

/// The cursor saved with a sequence's position: an entry at or before it, in bounded memory.
@Suite struct JournalCheckpointsTests {
    @Test func thePositionGetsTheNewestCursorBeforeIt() {
        var checkpoints = JournalCheckpoints()
        for seqnum in Int64(10)...20 { checkpoints.add(JournalStartTests.cursor("a", seqnum, time: seqnum)) }
        let source = JournalStartTests.cursor("a", 1, time: 1).source
        #expect(checkpoints.cursor(of: source, before: 15) == JournalStartTests.cursor("a", 14, time: 14).text)
        // Older ones are let go; the same position asks again alike; none before the first.
        #expect(checkpoints.count(of: source) == 7)
        #expect(checkpoints.cursor(of: source, before: 15) == JournalStartTests.cursor("a", 14, time: 14).text)
        #expect(checkpoints.cursor(of: source, before: 10) == nil)
        #expect(checkpoints.cursor(of: JournalStartTests.cursor("b", 1, time: 1).source, before: 99) == nil)
    }

    /// However many entries wait for their acknowledgement, a sequence keeps at most `limit`
    /// cursors, the oldest among them: the saved cursor is then further back, never past.
    @Test func manyEntriesKeepABoundedNumberOfCursors() {
        var checkpoints = JournalCheckpoints()
        let count = Int64(JournalCheckpoints.limit * 5)
        for seqnum in 1...count { checkpoints.add(JournalStartTests.cursor("a", seqnum, time: seqnum)) }
        let source = JournalStartTests.cursor("a", 1, time: 1).source
        #expect(checkpoints.count(of: source) <= JournalCheckpoints.limit)
        let found = checkpoints.cursor(of: source, before: count / 2).flatMap { JournalCursor($0) }
        #expect(found.map { $0.seqnum < count / 2 && $0.seqnum > count / 4 } == true, "\(String(describing: found))")
    }
}
