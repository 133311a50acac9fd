import StreamUp
import StreamUpJournal
import Testing

/// Where journalctl starts after a restart, and which entries it gives again that were sent:
/// every sequence-number id its own position.
@Suite struct JournalStartTests {
    static func cursor(_ sequence: Character, _ seqnum: Int64, time: Int64) -> JournalCursor {
        JournalCursor(
            "s=\(String(repeating: sequence, count: 32));i=\(String(seqnum, radix: 16));b=\(String(repeating: "b", count: 32));m=1;t=\(String(time, radix: 16));x=2"
        )!
    }

    static func position(_ cursor: JournalCursor, next: Int64) -> SourcePosition {
        SourcePosition(source: cursor.source, path: cursor.text, offset: next)
    }

    /// Three sequences (three boots' or hosts' files): journalctl starts at the latest saved
    /// entry, and each sequence's entries below its own position are passed over.
    @Test func eachSequenceGoesOnFromItsOwnPosition() {
        let a = Self.cursor("a", 50, time: 3_000)
        let b = Self.cursor("b", 20, time: 9_000)
        let c = Self.cursor("c", 70, time: 5_000)
        let start = JournalStart.plan(saved: [Self.position(a, next: 51), Self.position(b, next: 21), Self.position(c, next: 71)], fromStart: false)
        #expect(start.seek == .cursor(b))
        #expect(start.notes.isEmpty)
        #expect(start.wasSent(Self.cursor("a", 50, time: 0)) && !start.wasSent(Self.cursor("a", 51, time: 0)))
        #expect(start.wasSent(Self.cursor("b", 20, time: 0)) && !start.wasSent(Self.cursor("b", 21, time: 0)))
        #expect(start.wasSent(Self.cursor("c", 1, time: 0)) && !start.wasSent(Self.cursor("c", 71, time: 0)))
        // A sequence the state does not know is new: all of it is sent.
        #expect(!start.wasSent(Self.cursor("d", 1, time: 0)))
    }

    @Test func aFirstRunStartsAtTheEndOrWithFromStartAtTheStart() {
        #expect(JournalStart.plan(saved: [], fromStart: false).seek == .tail)
        #expect(JournalStart.plan(saved: [], fromStart: true).seek == .head)
        // A file's position is no journal's.
        let file = SourcePosition(source: SourceID(device: 2049, inode: 7), path: "/var/log/app.log", offset: 10)
        #expect(JournalStart.plan(saved: [file], fromStart: false).seek == .tail)
    }

    /// A position saved by an earlier streamup (the sequence id alone in its path) still works.
    @Test func aPositionOfAnEarlierVersionGoesOnAfterItsEntry() {
        let id = String(repeating: "a", count: 32)
        let start = JournalStart.plan(saved: [SourcePosition(source: SourceID.sequence(id), path: "s=\(id)", offset: 0x20)], fromStart: false)
        #expect(start.seek == .afterCursor("s=\(id);i=1f"))
        #expect(start.wasSent(Self.cursor("a", 0x1f, time: 0)) && !start.wasSent(Self.cursor("a", 0x20, time: 0)))
    }

    /// A damaged cursor is not handed to journalctl: one line says what was done, and what its
    /// number says was sent is still not sent again.
    @Test func aDamagedCursorIsLeftOutWithOneLine() {
        let a = Self.cursor("a", 50, time: 3_000)
        let damaged = SourcePosition(source: Self.cursor("b", 1, time: 0).source, path: "s=bbbb;i=zz", offset: 9)
        let withOther = JournalStart.plan(saved: [damaged, Self.position(a, next: 51)], fromStart: false)
        #expect(withOther.seek == .cursor(a))
        #expect(withOther.notes.count == 1 && withOther.notes[0].contains("s=bbbb;i=zz") && withOther.notes[0].contains("other saved positions"))
        #expect(withOther.wasSent(Self.cursor("b", 8, time: 0)))
        let alone = JournalStart.plan(saved: [damaged], fromStart: false)
        #expect(alone.seek == .tail)
        #expect(alone.notes.count == 1 && alone.notes[0].contains("journal's end as a first run does"))
    }

    /// The entry journalctl starts at is checked against what it gives first of its sequence:
    /// one line when it is gone (removed, or another machine's state file).
    @Test func aStartEntryNotInTheJournalIsSaidOnce() {
        let a = Self.cursor("a", 50, time: 3_000)
        var found = JournalStart.plan(saved: [Self.position(a, next: 51)], fromStart: false)
        #expect(found.check(Self.cursor("b", 3, time: 3_000)) == nil)
        #expect(found.check(a) == nil)
        #expect(found.check(Self.cursor("a", 60, time: 4_000)) == nil)
        var gone = JournalStart.plan(saved: [Self.position(a, next: 51)], fromStart: false)
        let line = gone.check(Self.cursor("a", 60, time: 4_000))
        #expect(line?.contains("is not in the journal") == true)
        #expect(gone.check(Self.cursor("a", 61, time: 4_000)) == nil)
    }
}
