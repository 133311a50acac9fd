import StreamUp
import StreamUpSystem

/// One file a ``FileTailer`` follows: which file it is, where it is read, and what became of
/// its name.
///
///     0 ........ offset ........ scanned ........ size
///     | sent     | a line still without its newline | (not read yet)
///
/// `offset` is always at a line boundary (or the start): what is before it went into the
/// writer. `scanned` marks how far a line longer than one read chunk is known to run without a
/// newline, so it is not searched again.
///
/// Thread safety: a value type, confined to the tailer's thread (it holds the open file).
struct TailedFile {
    let identity: FileIdentity
    /// Where it was last seen matching a pattern (kept after it vanished: a new file at this
    /// path waits until this one is drained).
    var path: String
    /// The open file; nil while it waits for a descriptor.
    var file: ReadOnlyFile?
    /// The next byte to send; a line boundary.
    var offset: Int64
    /// How far a long line is known to run without a newline (≥ `offset`).
    var scanned: Int64
    /// The fingerprint of its first bytes (`FileFingerprint`); 0 while it has none.
    var fingerprint: UInt64 = 0
    /// When no pattern matched it any more (renamed away or deleted); nil while it matches.
    var vanishedAt: ContinuousClock.Instant?
    /// Whether a new file at its path has data: it is read to its end, then dropped.
    var finishing = false
    /// Whether its last turn found no whole line left to send.
    var atEnd = false
    /// Bytes after `offset` without a newline, as of the last turn that reached the end.
    var pending: Int64 = 0
    /// The file that is read before this one: the old file at the same path, drained first
    /// (rename rotation); or this file's copy, whose bytes after this file's offset at the
    /// truncation go first (copytruncate).
    var heldBy: FileIdentity?
    /// The followed file whose first bytes this one starts with (copytruncate's copy, or any
    /// `cp`): not read while that file goes on, as its bytes are that file's; when that file is
    /// truncated, read from where that file was.
    var copyOf: FileIdentity?
    /// Whether it was found new (no saved position) and nothing of it was read: if its first
    /// bytes are a followed file's, it is a copy of that file (``copyOf``).
    var mayBeACopy = false
    /// When it last grew (or was found), for `rotateWait`.
    var lastGrowth: ContinuousClock.Instant

    init(identity: FileIdentity, path: String, file: ReadOnlyFile?, offset: Int64, now: ContinuousClock.Instant) {
        self.identity = identity
        self.path = path
        self.file = file
        self.offset = offset
        self.scanned = offset
        self.lastGrowth = now
    }

    /// The source the bytes are marked with.
    var sourceID: SourceID {
        SourceID(device: identity.device, inode: identity.inode, fingerprint: fingerprint)
    }

    /// Its position, for the saved state.
    var position: SourcePosition {
        SourcePosition(source: sourceID, path: path, offset: offset)
    }

    var hasVanished: Bool { vanishedAt != nil }
}
