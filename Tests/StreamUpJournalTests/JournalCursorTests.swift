import StreamUp
import StreamUpJournal
import Testing

/// Cursors as journalctl writes them, and text that is not one (never handed to journalctl).
@Suite struct JournalCursorTests {
    static let full = "s=25542b9351e7442194bf7bafb90af8e5;i=1388;b=0123456789abcdef0123456789abcdef;m=1388;t=66157afd0a318;x=4a4326994a61eb7e"

    @Test func aCursorJournalctlWroteNamesItsSequenceNumberAndTime() throws {
        let cursor = try #require(JournalCursor(Self.full))
        #expect(cursor.seqnumID == "25542b9351e7442194bf7bafb90af8e5")
        #expect(cursor.seqnum == 0x1388)
        #expect(cursor.realtime == 0x6_6157_afd0_a318)
        #expect(cursor.isComplete)
        #expect(cursor.source == SourceID.sequence("25542b9351e7442194bf7bafb90af8e5") && cursor.source.isSequence)
    }

    @Test func textThatIsNotACursorIsRefused() {
        for text in [
            "", "s=25542b9351e7442194bf7bafb90af8e5", "i=5", "s=xyz;i=5", "s=25542b9351e7442194bf7bafb90af8e5;i=5;q=1",
            "s=25542b9351e7442194bf7bafb90af8e5;i=5;i=6", "s=25542b9351e7442194bf7bafb90af8e5;i=-5", "s=25542b9351e7442194bf7bafb90af8e5;i=5 --x",
            "s=25542B9351E7442194BF7BAFB90AF8E5;i=5", "s=25542b9351e7442194bf7bafb90af8e5;i=fffffffffffffffff",
        ] {
            #expect(JournalCursor(text) == nil, "\(text)")
        }
        #expect(JournalCursor("s=25542b9351e7442194bf7bafb90af8e5;i=5")?.isComplete == false)
    }
}
