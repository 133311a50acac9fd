/// What the events of a ``ReplayLog`` answer: the space a writer finds, the actions its owner
/// carries out after unlocking, what a live read finds.
extension ReplayLog {
    /// What the turn's holder finds when it asks for free space (``ReplayLog/reserve(now:)``).
    ///
    /// Thread safety: a value type.
    enum Reservation {
        /// `free` bytes are free at `offset` (0: the buffer is full); `boundary` is the last
        /// record end before them.
        case space(offset: Int, free: Int, boundary: Int)
        /// Its own bytes, which the storage had no room for: it commits them again.
        case held(Filled)
        /// Nothing more is written: the failure, or the end. Bytes it held are dropped; the
        /// actions say so.
        case closed(StreamUpError, Actions)
    }

    /// What the owner does once it has left its lock, in this order: the storage and the
    /// callbacks first (so a stop's losses are said before its end is seen), then the timer,
    /// then the waiters.
    ///
    /// Thread safety: a value type.
    struct Actions {
        /// Bytes a stop dropped: the storage discards them, ``ReplayBuffer/onDroppedAtStop`` hears
        /// how many.
        var dropped: Range<Int>?
        /// Bytes read from the input that a stop or a leaving writer dropped while they waited
        /// for room on the storage: ``ReplayBuffer/onHeldDropped`` hears how many.
        var heldDropped: Int?
        /// The input itself ended at this offset: tell the storage.
        var inputEndedAt: Int?
        /// A stop's losses are said by the actions above: then tell the log
        /// (``ReplayLog/stopReported()``), whose actions end the input for readers.
        var endsStop = false
        /// The timer to keep from now on, when it changed.
        var timer: Timer?
        /// Waiters to wake, each with its outcome; they are out of the table.
        var wake: [(wake: Wake, wakeup: LogWakeup)] = []
    }

    /// What a live read finds (``ReplayLog/liveRead()``).
    ///
    /// Thread safety: a value type.
    enum LiveRead {
        case failed(StreamUpError)
        /// Nothing held and the input ended.
        case end
        /// Nothing held yet.
        case nothing
        /// `count` bytes held from `offset`.
        case bytes(offset: Int, count: Int)
    }
}

extension ReplayLog.Actions: Sendable where Wake: Sendable {}
extension ReplayLog.Reservation: Sendable where Wake: Sendable {}
