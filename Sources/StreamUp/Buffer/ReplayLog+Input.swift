extension ReplayLog {
    /// Where the writing side of the log stands: its lifecycle, from open to ended. Each case
    /// carries what is valid in it; the log's failure is kept beside it (``ReplayLog/failure``),
    /// because a failure may come in any of these states and leaves it as it was (a finish after
    /// a failure still tells the storage where the input ended).
    ///
    ///     open ──finish──────────────────────────────────▶ ended(.reached)
    ///       │ └─stop, nothing to say ─────────────────────▶ ended(.stopped(stop))
    ///       └──stop that drops bytes or held bytes ─▶ stopping(stop) ──stopReported──▶ ended(.stopped(stop))
    ///
    /// Thread safety: a value type, kept in the log.
    enum Input: Equatable {
        /// Writes are taken.
        case open
        /// A stop whose losses are being said (the storage discards the unfinished record, the
        /// buffer's callbacks hear how many bytes were dropped) before readers see the end:
        /// writes are refused, readers wait on; ``ReplayLog/stopReported()`` ends the input.
        case stopping(Stop)
        /// Nothing more is written.
        case ended(Ending)
    }

    /// How the input ended.
    ///
    /// Thread safety: a value type.
    enum Ending: Equatable {
        /// Its own end (the producer returned), at the written offset: a last record without
        /// `\n` is whole, and the storage is told where the input ended.
        case reached
        /// A stop (a signal, a finish), which the storage is not told: what it holds may end in
        /// the middle of a record.
        case stopped(Stop)
    }

    /// What a stop does with the unfinished last record, and with bytes read after it.
    ///
    /// Thread safety: a value type.
    enum Stop: Equatable {
        /// Keeps them: the unfinished record becomes a record, and a read under way still goes
        /// in (raw bytes have no records; with source positions saved, those bytes are where the
        /// saved position stands).
        case keeps
        /// Dropped the unfinished record (lines mode): a read after the stop is not taken.
        case dropped
        /// Drops the unfinished record once the write under way at the stop has ended (then
        /// ``dropped``); a read after the stop is not taken.
        case dropsAfterWrite
    }

    /// The write of the turn's holder from the moment its bytes are filled until they are
    /// counted. (While the holder fills free space the log knows nothing of it: it takes
    /// nothing from that space until the bytes are committed.)
    ///
    /// Thread safety: a value type.
    enum Write {
        /// No bytes are between filling and counting.
        case idle
        /// The holder is committing its bytes to the storage, outside the lock.
        case committing
        /// The storage had no room for them (a full disk): they wait with their writer, which
        /// keeps its turn, and are committed again when it tries again.
        case held(Held)
    }

    /// Bytes filled and their record ends found, on their way into the storage.
    ///
    /// Thread safety: a value type; `@unchecked Sendable` because of `space`, the storage's
    /// writable space at `offset`, which only the turn's holder touches (it hands the value to
    /// the log, and takes it back, under the buffer's lock).
    struct Filled: @unchecked Sendable {
        /// Where the bytes are: the storage's writable space, of which they are the first `count`.
        let space: UnsafeMutableRawBufferPointer
        let count: Int
        /// Their stream offset (the written offset when they were reserved).
        let offset: Int
        /// The source bytes they stand for (nil: none to remember).
        let mark: SourceMark?
        /// The last record end once they are in, and the splits of over-long records in them.
        let boundary: Int
        let splits: [Int]
        /// The newlines they hold (lines mode; 0 otherwise).
        let lines: Int
        /// When they were read: their write time.
        let time: ContinuousClock.Instant
    }

    /// Filled bytes the storage had no room for, and when to try them again.
    ///
    /// Thread safety: a value type.
    struct Held {
        let bytes: Filled
        /// When the storage is tried again.
        let retryAt: UploadClock.Instant
        /// The acknowledged offset when they were held: an acknowledgement past it may free
        /// room on the storage (a spool deletes a file), so their writer tries again at once.
        let acknowledged: Int
        /// Whether a stop said already that they are dropped (it says so before its end is seen,
        /// and their writer, woken by the end, drops them without a second word).
        var reported: Bool
    }
}

extension ReplayLog.Held: Sendable where Wake: Sendable {}
extension ReplayLog.Write: Sendable where Wake: Sendable {}
extension ReplayLog.Input: Sendable where Wake: Sendable {}
extension ReplayLog.Ending: Sendable where Wake: Sendable {}
extension ReplayLog.Stop: Sendable where Wake: Sendable {}
