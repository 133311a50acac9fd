import StreamUp

/// The cursors of entries read but whose position is not saved yet, per sequence, so that the
/// state file can save with a sequence's position the cursor of an entry at or before it: the
/// place `journalctl --cursor` starts from after a restart (the entries from there up to the
/// position are read again and passed over, ``JournalStart``).
///
/// Bounded: at most ``limit`` cursors per sequence; when full, every other one is let go
/// (the oldest kept), so the cursor saved may lie further before the position (more is read
/// again after a restart, nothing more is sent).
///
/// Thread safety: a value type; ``JournalProducer`` keeps it under its lock.
package struct JournalCheckpoints {
    /// The most cursors kept per sequence.
    package static let limit = 4096

    private var bySource: [SourceID: [(seqnum: Int64, cursor: String)]] = [:]

    package init() {}

    /// Notes the cursor of an entry just read.
    package mutating func add(_ cursor: JournalCursor) {
        var kept = bySource.removeValue(forKey: cursor.source) ?? []
        if let last = kept.last, last.seqnum >= cursor.seqnum {
            // A sequence read again from an earlier place (never in one run): start over.
            kept.removeAll()
        }
        if kept.count >= Self.limit {
            kept = kept.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
        }
        kept.append((cursor.seqnum, cursor.text))
        bySource[cursor.source] = kept
    }

    /// The cursor of the newest entry of `source` before `position` (the number of the next
    /// entry to read), letting the older ones go: positions only move forward. Nil when none
    /// was read before it in this run.
    package mutating func cursor(of source: SourceID, before position: Int64) -> String? {
        guard var kept = bySource[source] else { return nil }
        // The first one at or after the position, by halves: the one before it is the newest before.
        var low = 0
        var high = kept.count
        while low < high {
            let middle = (low + high) / 2
            if kept[middle].seqnum < position { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return nil }
        let found = kept[low - 1].cursor
        kept.removeFirst(low - 1)
        bySource[source] = kept
        return found
    }

    /// How many cursors are kept for `source` (for tests).
    package func count(of source: SourceID) -> Int { bySource[source]?.count ?? 0 }
}
