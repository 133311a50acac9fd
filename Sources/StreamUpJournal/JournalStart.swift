import StreamUp

/// Where journalctl starts reading, and which entries it reads again that were sent before: a
/// pure plan from the positions the state file saved (``plan(saved:fromStart:)``).
///
/// Each sequence of entries (``JournalCursor/seqnumID``: one per journald, per volatile boot,
/// per host, per `systemd-journal-remote` output) has a position of its own: the number of its
/// next entry to send, and the cursor of an entry at or before it (``JournalCheckpoints``).
/// journalctl takes one cursor: it starts at the saved cursor with the latest time
/// (`--cursor`, which places the other sequences' files by time), and every entry it gives of a
/// known sequence below that sequence's position is passed over. journalctl gives each
/// sequence's entries in order and places every file at or before what is not sent yet, so each
/// entry goes once: none twice, none left behind.
///
/// Thread safety: a value type.
package struct JournalStart: Equatable, Sendable {
    /// Where journalctl begins.
    ///
    /// Thread safety: a value type.
    package enum Seek: Equatable, Sendable {
        /// At this entry (`--cursor`), which is read again.
        case cursor(JournalCursor)
        /// After the entry a position saved by an earlier streamup names (`--after-cursor`
        /// with `s=` and `i=` only).
        case afterCursor(String)
        /// At the journal's first entry (`--from-start` on a first run).
        case head
        /// At its end: the caller asks journalctl for its last entry and starts at it.
        case tail
    }

    package var seek: Seek
    /// The number of each known sequence's next entry to send: entries below it were sent.
    package var next: [SourceID: Int64]
    /// What was done with saved positions that name no entry (one line each).
    package var notes: [String]

    /// The plan for `saved` (the state file's positions; the journal's are those of sequence
    /// sources), starting a first run at the journal's start when `fromStart`, else at its end.
    package static func plan(saved: [SourcePosition], fromStart: Bool) -> JournalStart {
        var next: [SourceID: Int64] = [:]
        var notes: [String] = []
        var damaged: [String] = []
        var latest: JournalCursor?
        var legacy: String?
        for position in saved where position.source.isSequence {
            // The number says what was sent, whatever the cursor beside it says.
            next[position.source] = max(next[position.source] ?? 0, position.offset)
            if let cursor = JournalCursor(position.path), cursor.source == position.source, cursor.isComplete {
                if latest.map({ (cursor.realtime ?? 0) > ($0.realtime ?? 0) }) ?? true { latest = cursor }
            } else if position.path.hasPrefix("s="), position.offset > 0,
                let cursor = JournalCursor("\(position.path);i=\(String(position.offset - 1, radix: 16))"), cursor.source == position.source
            {
                // Saved by an earlier streamup, which kept the sequence's id alone.
                legacy = cursor.text
            } else if !position.path.isEmpty {
                damaged.append(String(position.path.prefix(100)))
            }
        }
        let seek: Seek
        if let latest {
            seek = .cursor(latest)
        } else if let legacy {
            seek = .afterCursor(legacy)
        } else {
            seek = fromStart ? .head : .tail
        }
        if !damaged.isEmpty {
            let done =
                switch seek {
                case .cursor, .afterCursor: "starting from the other saved positions"
                case .head: "starting at the journal's start (--from-start), passing over the entries the saved numbers say were sent"
                case .tail:
                    "starting at the journal's end as a first run does: entries written since the last run are not sent (move the state file away and give --from-start to send the journal again)"
                }
            notes.append(
                "the state file holds \(damaged.count == 1 ? "a journal position" : "\(damaged.count) journal positions") that \(damaged.count == 1 ? "is" : "are") not a journalctl cursor ('\(damaged[0])'): \(done)"
            )
        }
        return JournalStart(seek: seek, next: next, notes: notes)
    }

    package init(seek: Seek, next: [SourceID: Int64], notes: [String]) {
        self.seek = seek
        self.next = next
        self.notes = notes
    }

    /// Whether the first entry of the start cursor's sequence was checked (``check(_:)``).
    private var checked = false

    /// Checks an entry journalctl gives against the one it was told to start at: the first entry
    /// of that sequence it gives is that one, unless the entry is gone (entries of other files
    /// with the same time may come first). Returns the one line that says so, once.
    package mutating func check(_ cursor: JournalCursor) -> String? {
        guard !checked, case .cursor(let expected) = seek, cursor.seqnumID == expected.seqnumID else { return nil }
        checked = true
        guard cursor.seqnum != expected.seqnum else { return nil }
        return "the journal entry to start from (\(expected.text)) is not in the journal journalctl reads (removed or rotated away, "
            + "another machine's state file, or other --unit/--priority): went on from that entry's time; entries removed before they were "
            + "sent are lost"
    }

    /// Whether `entry` was sent before (its sequence's position is past it).
    package func wasSent(_ cursor: JournalCursor) -> Bool {
        guard let position = next[cursor.source] else { return false }
        return cursor.seqnum < position
    }
}
