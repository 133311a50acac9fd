import StreamUp
import StreamUpJournal
import Testing

/// The journal's stream after a restart: the saved one for the same records, a new one else.
@Suite struct JournalStreamTests {
    @Test func theSavedStreamGoesOnForTheSameRecordsOnly() {
        let first = JournalStream.id(continuing: nil, digest: 0xabc)
        #expect(first.hasSuffix("-jabc"))
        let saved = SourceState(streamID: first, streamOffset: 120, sources: [])
        #expect(JournalStream.id(continuing: saved, digest: 0xabc) == first)
        let other = JournalStream.id(continuing: saved, digest: 0xabd)
        #expect(other != first && other.hasSuffix("-jabd"))
        #expect(JournalStream.id(continuing: SourceState(streamID: "8e97e104-ac47-475d-b093-9cdda17a733c", sources: []), digest: 0xabc) != first)
    }

    /// Every command line reads every boot (`--merge`: `--follow` alone implies the last boot).
    @Test func journalctlReadsEveryBoot() throws {
        let selection = JournalSelection(directory: "/var/log/remote", units: ["a.service"], priority: "err")
        let cursor = try #require(JournalCursor(JournalCursorTests.full))
        for arguments in [selection.lastEntryArguments, selection.followArguments(from: .cursor(cursor)), selection.followArguments(from: .head)] {
            #expect(arguments.first == "journalctl" && arguments.contains("--merge") && arguments.contains("--output=export"))
            #expect(arguments.contains("--directory=/var/log/remote") && arguments.contains("--unit=a.service") && arguments.contains("--priority=err"))
        }
        #expect(selection.followArguments(from: .cursor(cursor)).suffix(3) == ["--follow", "--cursor=\(cursor.text)", "--no-tail"])
    }

    /// A journalctl that ended by itself is said as what happened.
    @Test func aKilledJournalctlIsSaidAsKilled() {
        let killed = JournalctlEnd.line(status: 9, signaled: true)
        #expect(killed.hasPrefix("journalctl was killed by signal 9 (Killed)"), "\(killed)")
        #expect(!killed.contains("exit status"))
        #expect(JournalctlEnd.line(status: 1, signaled: false).hasPrefix("journalctl ended with exit status 1"))
        #expect(JournalctlEnd.line(status: 127, signaled: false).contains("installed"))
    }
}
