import StreamUp

/// A journalctl cursor, `s=SEQNUM_ID;i=SEQNUM;b=BOOT_ID;m=MONOTONIC;t=REALTIME;x=XOR_HASH`: where
/// one entry stands in the journal. `s` names the sequence its entry belongs to (one journald's
/// files; each boot of a journal kept in memory, each host and each `systemd-journal-remote`
/// output has its own), `i` its number there (hexadecimal, from 1); `b` and `m` its boot and
/// monotonic time, `t` its wall-clock time (microseconds, hexadecimal), `x` a hash of its fields.
/// `journalctl --cursor` finds the entry again by `s` and `i` in the files of that sequence, and
/// places the other files by `b` and `m` (the same boot) or `t`.
///
/// Only the text journalctl writes is taken (the keys above, lowercase hexadecimal values, `s`
/// and `i` present): anything else is not a cursor, and is never handed to journalctl.
///
/// Thread safety: a value type.
package struct JournalCursor: Equatable, Sendable {
    /// The cursor as journalctl wrote it.
    package let text: String
    /// `s`: the sequence-number id, 32 hexadecimal digits.
    package let seqnumID: String
    /// `i`: the entry's sequence number.
    package let seqnum: Int64
    /// `t`: the entry's wall-clock time in microseconds since 1970, if the cursor has one.
    package let realtime: Int64?

    /// The cursor `text`; nil when it is not one journalctl writes.
    package init?(_ text: String) {
        guard !text.isEmpty, text.utf8.count <= 256 else { return nil }
        var values: [Character: Substring] = [:]
        for part in text.split(separator: ";", omittingEmptySubsequences: false) {
            guard part.count > 2, let key = part.first, "sibmtx".contains(key), part.dropFirst().first == "=", values[key] == nil else { return nil }
            let value = part.dropFirst(2)
            guard value.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else { return nil }
            let isID = key == "s" || key == "b"
            guard isID ? value.count == 32 : value.count <= 16 else { return nil }
            values[key] = value
        }
        guard let seqnumID = values["s"], let seqnum = values["i"].flatMap({ UInt64($0, radix: 16) }), seqnum <= UInt64(Int64.max) else { return nil }
        self.text = text
        self.seqnumID = String(seqnumID)
        self.seqnum = Int64(seqnum)
        realtime = values["t"].flatMap { UInt64($0, radix: 16) }.flatMap { $0 <= UInt64(Int64.max) ? Int64($0) : nil }
    }

    /// The source of the entries of this cursor's sequence.
    package var source: SourceID { .sequence(seqnumID) }

    /// Whether the cursor places every file (it has the boot, both times and the hash), not
    /// only the files of its own sequence.
    package var isComplete: Bool {
        ["b=", "m=", "t=", "x="].allSatisfy { key in text.split(separator: ";").contains { $0.hasPrefix(key) } }
    }
}
