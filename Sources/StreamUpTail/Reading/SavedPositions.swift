import Foundation
import StreamUp
import StreamUpSystem

/// The positions a ``FileTailer`` was handed to resume from, matched to the files it finds at
/// start: by device and inode, and by fingerprint (`FileFingerprint`) when one was saved, so
/// that a new file that got an old file's inode number starts afresh.
///
/// Several saved positions can name one device and inode (an older file whose inode was
/// reused; a file saved before and after its fingerprint was known): the most recent one that
/// matches wins, the others are stale.
///
/// Thread safety: a value type, confined to the tailer's thread.
struct SavedPositions {
    /// Not yet matched, the most recent last.
    private(set) var remaining: [SourcePosition]
    /// Whether nothing was saved: files found at start then begin at the tailer's start
    /// position (the end, by default); otherwise files the state does not know appeared
    /// while nobody followed, and are read from their beginning.
    let isFirstRun: Bool
    /// A second before the positions were saved (nil: unknown): a file last written since
    /// then may hold lines the positions do not cover. The second's margin covers the file
    /// system's own granularity of times (a write in the save's tick has the save's time, which
    /// a `Date` rounds).
    let savedAt: timespec?

    init(_ positions: [SourcePosition], savedAt: Date? = nil) {
        remaining = positions
        isFirstRun = positions.isEmpty
        self.savedAt = savedAt.map { timespec(tv_sec: Int($0.timeIntervalSince1970.rounded(.down)) - 1, tv_nsec: 0) }
    }

    /// The saved positions of `identity`'s device and inode, the most recent last; they leave
    /// ``remaining``. The caller keeps the last whose fingerprint matches the file (``pick(_:matches:)``).
    mutating func take(_ identity: FileIdentity) -> [SourcePosition] {
        let same = remaining.filter { $0.source.device == identity.device && $0.source.inode == identity.inode }
        if !same.isEmpty { remaining.removeAll { $0.source.device == identity.device && $0.source.inode == identity.inode } }
        return same
    }

    /// The most recent of `candidates` for which `matches` (a fingerprint check) holds, and
    /// the others (stale).
    static func pick(_ candidates: [SourcePosition], matches: (UInt64) throws -> Bool) rethrows -> (match: SourcePosition?, stale: [SourcePosition]) {
        var match: SourcePosition?
        for candidate in candidates.reversed() where match == nil {
            if try matches(candidate.source.fingerprint) { match = candidate }
        }
        return (match, candidates.filter { $0 != match })
    }

    /// Takes every position still unmatched.
    mutating func takeRemaining() -> [SourcePosition] {
        defer { remaining = [] }
        return remaining
    }
}
