/// What a waiter of a ``ReplayLog`` is woken with.
enum LogWakeup: Equatable, Sendable {
    /// What it waited for is there (or its deadline passed, or the log failed or ended): it
    /// looks again.
    case ready
    /// A writer in line: what became of it.
    case turn(WriterLine<Int>.Outcome)
    /// Its writer was cancelled: it is out of the line and holds no turn.
    case cancelled
}

/// The state of one replay buffer as a pure state machine: the cursors, the record splits,
/// how the input ended, the writers' line, and one table of waiters. Each event is a mutating
/// method that returns what its owner must do next (``Actions``): wake these waiters with these
/// outcomes, tell the storage this, arm the deadline timer then. It never blocks, reads no
/// clock (instants come with the events), does no I/O and resumes nothing itself, so it is
/// tested by feeding it events (`ReplayLogTests`).
///
///     acknowledged           boundary         written
///          |== unacknowledged, complete records ==|-- partial record --|.... free ....|
///          ^ freed by acknowledgements            ^ readable up to here               ^ acknowledged + capacity
///     invariant: acknowledged <= boundary <= written <= acknowledged + capacity
///
/// A waiter is what it waits for (``Wait``) and how it is woken (`Wake`: for ``ReplayBuffer``, a
/// task's continuation or a parked thread; anything in tests). Readers of disjoint ranges above
/// `acknowledged` (segments in flight at once) each wait for records past their own offset.
///
/// Thread safety: a value type; ``ReplayBuffer`` keeps it under its one lock.
struct ReplayLog<Wake> {
    /// What a waiter waits for.
    enum Wait: Equatable {
        /// A writer in line (``WriterLine``) waits for its turn, or the holder for space.
        case turn(writer: Int)
        /// A cut at `offset` of a segment that began at `start` would find something new: a
        /// record past `offset`, the input's end, a failure, or a full buffer while the
        /// segment holds a record (then it ends to free room); or `deadline` passed.
        case readable(from: Int, start: Int, deadline: UploadClock.Instant?)
        /// Everything below `offset` is acknowledged (or the log failed).
        case acknowledged(upTo: Int)
        /// A live read would find a byte, the end or a failure.
        case liveInput
        /// The writer whose turn it is holds bytes its storage had no room for (a full disk):
        /// it tries again at `retryAt`, or once an acknowledgement past `acknowledged` frees
        /// some of the storage's room, or when the log fails or its input ends.
        case storageRoom(acknowledged: Int, retryAt: UploadClock.Instant)
    }

    /// One entry of the waiter table.
    struct Waiter {
        let id: Int
        let wait: Wait
        let wake: Wake
    }

    /// The one timer the owner keeps: it calls ``deadlinePassed(generation:now:)`` at
    /// `deadline` (nil: no timer); a timer of an older generation is stale.
    struct Timer: Equatable {
        var deadline: UploadClock.Instant?
        var generation: Int
    }

    /// What the owner does once it has left its lock.
    struct Actions {
        /// Waiters to wake, each with its outcome; they are out of the table.
        var wake: [(wake: Wake, wakeup: LogWakeup)] = []
        /// The timer to keep from now on, when it changed.
        var timer: Timer?
        /// Bytes a stop dropped (the storage discards them, ``ReplayBuffer/onDroppedAtStop`` hears
        /// how many).
        var dropped: Range<Int>?
        /// The input itself ended at this offset: tell the storage.
        var inputEndedAt: Int?
    }

    /// What a live read finds (``liveRead()``).
    enum LiveRead {
        case failed(StreamUpError)
        /// Nothing held and the input ended.
        case end
        /// Nothing held yet.
        case nothing
        /// `count` bytes held from `offset`.
        case bytes(offset: Int, count: Int)
    }

    let capacity: Int
    let records: RecordMode
    /// Whether acknowledgements report source positions; a stop then keeps the unfinished record.
    let tracksSources: Bool

    private(set) var acknowledged: Int
    private(set) var written: Int
    /// The last record end written (splits included).
    private(set) var boundary: Int
    /// Boundaries made by splitting over-long records, above `acknowledged`, ascending.
    private(set) var splits: [Int] = []
    private(set) var splitRecords = 0
    private(set) var inputEnded = false
    /// The input itself ended, not a stop: a last record without `\n` is whole.
    private(set) var inputReachedEnd = false
    /// A producer's write is between committing its bytes and counting them.
    private(set) var writing = false
    /// A stop dropped the unfinished record: bytes read after it are not taken.
    private(set) var stoppedDropping = false
    /// A stop came during a write: that write drops the unfinished record when it ends.
    private var dropsUnfinishedAfterWrite = false
    private(set) var failure: StreamUpError?
    /// The writers: whose turn it is, and the waiter ids of those in line.
    private(set) var writers = WriterLine<Int>()
    /// Every waiter, in the order they came.
    private(set) var waiters: [Waiter] = []
    private var nextWaiterID = 0
    /// Writers whose waits end at once from now on (a thread writer's producer was cancelled).
    private var cancelledWriters: Set<Int> = []
    private(set) var timer = Timer(deadline: nil, generation: 0)
    /// Which source positions the held bytes stand for.
    var index: SourceIndex
    private(set) var pausedSince: ContinuousClock.Instant?
    private(set) var pauses = 0
    private(set) var pausedTime: Duration = .zero
    /// Newlines written in this run (lines mode only): the lines read, for `--metrics`.
    private(set) var lines = 0
    /// When the held bytes were written, for the age of the oldest (`--metrics`).
    private(set) var writeTimes = WriteTimes()

    /// A log over a storage of `capacity` bytes that already holds `acknowledged..<written`
    /// (whole records: what an earlier run left ended on boundaries).
    init(
        capacity: Int, records: RecordMode, acknowledged: Int = 0, written: Int = 0, tracksSources: Bool = false,
        index: SourceIndex = SourceIndex(), heldSince: ContinuousClock.Instant? = nil
    ) {
        precondition(0 <= acknowledged && acknowledged <= written && written - acknowledged <= capacity, "held bytes exceed the storage")
        self.capacity = capacity
        self.records = records
        self.tracksSources = tracksSources
        self.acknowledged = acknowledged
        self.written = written
        self.boundary = written
        self.index = index
        if written > acknowledged, let heldSince { writeTimes.wrote(at: acknowledged, time: heldSince) }
    }

    var free: Int { capacity - (written - acknowledged) }
    var isFull: Bool { written - acknowledged >= capacity }
    /// Whether nothing more is written: the log failed or its input ended.
    var isClosed: Bool { failure != nil || inputEnded }
    /// Whether a live reader waits for input.
    var liveReaderWaits: Bool { waiters.contains { $0.wait == .liveInput } }
    /// The offsets the readable waiters wait past.
    var readableWaitOffsets: [Int] {
        waiters.compactMap { if case .readable(let offset, _, _) = $0.wait { offset } else { nil } }
    }

    // MARK: Writing

    /// The writer whose turn it is asks for free space (`now`: for the pause count): the
    /// written offset, how much is free there, and the boundary before it.
    /// - Throws: the failure, or ``ReplayBuffer/ended`` once the input ended.
    mutating func reserve(now: ContinuousClock.Instant) throws(StreamUpError) -> (offset: Int, free: Int, boundary: Int) {
        if let failure { throw failure }
        guard !inputEnded else { throw ReplayBuffer.ended }
        if free == 0 {
            startPause(now: now)
        } else if let since = pausedSince {
            pausedTime += now - since
            pausedSince = nil
        }
        return (written, free, boundary)
    }

    /// The writer filled bytes and is about to commit them: false when a stop dropped the
    /// unfinished record meanwhile (the bytes are not taken).
    mutating func beginCommit() -> Bool {
        if stoppedDropping { return false }
        writing = true
        return true
    }

    /// `count` bytes are committed at `offset` (the written offset), ending records at
    /// `newBoundary` with `newSplits`, holding `newLines` newlines, written at `now`, from `mark`.
    mutating func committed(
        count: Int, at offset: Int, boundary newBoundary: Int, splits newSplits: [Int], lines newLines: Int,
        now: ContinuousClock.Instant, mark: SourceMark?
    ) -> Actions {
        precondition(offset == written && count <= free, "a commit outside the free space")
        written += count
        boundary = newBoundary
        if !newSplits.isEmpty {
            splits += newSplits
            splitRecords += newSplits.count
        }
        lines += newLines
        writeTimes.wrote(at: offset, time: now)
        if tracksSources, let mark { index.append(at: offset, count: count, mark: mark) }
        var actions = Actions()
        if dropsUnfinishedAfterWrite { actions.dropped = dropUnfinished() }
        writing = false
        settle(&actions)
        return actions
    }

    /// A write that ended before counting its bytes: no longer writing, and the drop a stop
    /// asked for during it is done now.
    mutating func endedEarly() -> Actions {
        writing = false
        var actions = Actions()
        if dropsUnfinishedAfterWrite { actions.dropped = dropUnfinished() }
        return actions
    }

    /// Source positions skipped at the written offset.
    mutating func skip(_ mark: SourceMark) {
        if tracksSources { index.skip(at: written, mark: mark) }
    }

    // MARK: Ending

    /// A stop in lines mode comes while no write is under way: the unfinished record is taken
    /// out now (returned, for the storage to discard before the end is seen). Not when source
    /// positions are saved: those bytes are where the saved position stands.
    mutating func stopDropping(stopped: Bool) -> Range<Int>? {
        guard stopped, !inputEnded, records == .lines, !tracksSources, !writing else { return nil }
        stoppedDropping = true
        let end = max(boundary, splits.last ?? boundary)
        return end..<written
    }

    /// The input has ended (`stopped`: a stop, not the input's own end; `dropping`: what
    /// ``stopDropping(stopped:)`` took out): the last partial record becomes a record, or a
    /// stop drops it (at once, or when the write under way ends).
    mutating func finish(stopped: Bool, dropping: Range<Int>?) -> Actions {
        var actions = Actions()
        if !inputEnded && !stopped {
            actions.inputEndedAt = written
            inputReachedEnd = true
        }
        let dropsUnfinished = stopped && !inputEnded && records == .lines && !tracksSources
        inputEnded = true
        if let dropping {
            written = dropping.lowerBound
        } else if !dropsUnfinished {
            boundary = written
        } else {
            // A commit is under way: it drops the unfinished record when it ends.
            stoppedDropping = true
            dropsUnfinishedAfterWrite = true
        }
        settle(&actions)
        return actions
    }

    /// Fails the log (the first failure wins): writes, reads and waits end with it.
    mutating func fail(_ error: StreamUpError) -> Actions {
        if failure == nil { failure = error }
        var actions = Actions()
        settle(&actions)
        return actions
    }

    /// Takes the bytes after the last record end out of the log; nil when there are none.
    private mutating func dropUnfinished() -> Range<Int>? {
        dropsUnfinishedAfterWrite = false
        let end = max(boundary, splits.last ?? boundary)
        guard written > end else { return nil }
        defer { written = end }
        return end..<written
    }

    // MARK: Acknowledging

    /// Where an acknowledgement up to `offset` moves the acknowledged offset (never back, never
    /// past the boundary), and the written offset, for telling the storage before
    /// ``acknowledge(upTo:)``.
    func acknowledgement(upTo offset: Int) -> (offset: Int, written: Int) {
        (min(max(offset, acknowledged), boundary), written)
    }

    /// The storage was told: the bytes below `offset` are free. Returns the source positions
    /// they stand for (empty unless sources are tracked).
    mutating func acknowledge(upTo offset: Int) -> (positions: [SourceID: Int64], actions: Actions) {
        var actions = Actions()
        var positions: [SourceID: Int64] = [:]
        if offset > acknowledged {
            precondition(offset <= boundary, "acknowledging bytes that are not records")
            acknowledged = offset
            splits.removeAll { $0 <= offset }
            writeTimes.acknowledge(upTo: offset)
            if tracksSources { positions = index.acknowledge(upTo: offset) }
        }
        settle(&actions)
        return (positions, actions)
    }

    // MARK: Reading

    /// Whether a cut at `offset` of a segment that began at `start` has something new.
    func isReadable(from offset: Int, start: Int) -> Bool {
        boundary > offset || inputEnded || failure != nil || (isFull && boundary > start)
    }

    /// What a live read from the acknowledged offset finds now.
    func liveRead() -> LiveRead {
        if let failure { return .failed(failure) }
        if written > acknowledged { return .bytes(offset: acknowledged, count: written - acknowledged) }
        return inputEnded ? .end : .nothing
    }

    // MARK: Waiting

    /// Adds a waiter for `wait`, woken by `wake`; it is woken at once (in the actions) when what
    /// it waits for is there, its deadline passed at `now`, or `cancelled` (its task was).
    /// `id` comes from ``newWaiterID()`` (taken before, so that a cancel can name it).
    mutating func wait(_ id: Int, for wait: Wait, wake: Wake, now: UploadClock.Instant? = nil, cancelled: Bool = false) -> Actions {
        precondition(!isTurn(wait), "writers wait through enterLine")
        var actions = Actions()
        if cancelled || isDone(wait, now: now) {
            actions.wake.append((wake, .ready))
        } else {
            waiters.append(Waiter(id: id, wait: wait, wake: wake))
            updateTimer(&actions)
        }
        return actions
    }

    /// Wakes waiter `id` at once (its task was cancelled); nothing when it was woken already.
    mutating func cancelWait(_ id: Int) -> Actions {
        var actions = Actions()
        if let index = waiters.firstIndex(where: { $0.id == id }) {
            let waiter = waiters.remove(at: index)
            if case .turn(let writer) = waiter.wait {
                _ = writers.remove(writer)
                actions.wake.append((waiter.wake, .cancelled))
                // The line may move on without it.
                settle(&actions)
            } else {
                actions.wake.append((waiter.wake, .ready))
            }
        }
        updateTimer(&actions)
        return actions
    }

    /// The timer of `generation` went off at `now`: waiters whose deadline passed are woken.
    mutating func deadlinePassed(generation: Int, now: UploadClock.Instant) -> Actions {
        var actions = Actions()
        guard generation == timer.generation else { return actions }
        // This timer is spent: a later deadline needs a new one.
        timer.deadline = nil
        wakeWaiters(&actions, now: now)
        updateTimer(&actions)
        return actions
    }

    // MARK: Writers' turns

    /// A new writer's name in the line.
    mutating func newWriterID() -> Int { writers.newID() }

    /// Writer `id` asks for the turn (see ``WriterLine/arrive(_:needs:patience:quick:free:closed:)``);
    /// a writer that must wait with no room pauses the producers (`now`: since when).
    mutating func arrive(
        _ id: Int, needs: Int, patience: WriterLine<Int>.Patience, quick: Bool, now: ContinuousClock.Instant
    ) -> WriterLine<Int>.Outcome {
        let outcome = writers.arrive(id, needs: needs, patience: patience, quick: quick, free: free, closed: isClosed)
        if outcome == .queued && patience == .waits && free == 0 { startPause(now: now) }
        return outcome
    }

    /// Writer `id` waits in line for `needs` free bytes, woken by `wake`: at the end of the line
    /// (after ``arrive(_:needs:patience:quick:now:)`` said `.queued`), or, `holding` the turn,
    /// first. `cancelled`: its task was cancelled (it does not enter).
    mutating func enterLine(
        _ id: Int, needs: Int, patience: WriterLine<Int>.Patience, holding: Bool, wake: Wake, cancelled: Bool = false
    ) -> Actions {
        var actions = Actions()
        if cancelled || cancelledWriters.contains(id) {
            actions.wake.append((wake, .cancelled))
            return actions
        }
        let waiterID = newWaiterID()
        let entry = WriterLine<Int>.Entry(id: id, needs: needs, patience: patience, waiter: waiterID)
        if holding { writers.waitForSpace(entry) } else { writers.enqueue(entry) }
        waiters.append(Waiter(id: waiterID, wait: .turn(writer: id), wake: wake))
        settle(&actions)
        return actions
    }

    /// Writer `id` gives the turn back; the next in line gets it when it can go on.
    mutating func leaveTurn(_ id: Int) -> Actions {
        writers.leave(id)
        var actions = Actions()
        settle(&actions)
        return actions
    }

    /// Whether writer `id` was cancelled for good (a thread writer whose producer was).
    func isCancelledWriter(_ id: Int) -> Bool { cancelledWriters.contains(id) }

    /// Ends the waits of writer `id` with ``LogWakeup/cancelled``: the one under way, and
    /// every later one when `forever` (a thread writer whose producer was cancelled).
    mutating func cancelWriter(_ id: Int, forever: Bool) -> Actions {
        if forever { cancelledWriters.insert(id) }
        guard let waiterID = writers.remove(id) else { return Actions() }
        return cancelWait(waiterID)
    }

    // MARK: Helpers

    /// A new waiter's name in the table.
    mutating func newWaiterID() -> Int {
        defer { nextWaiterID += 1 }
        return nextWaiterID
    }

    private mutating func startPause(now: ContinuousClock.Instant) {
        guard pausedSince == nil else { return }
        pausedSince = now
        pauses += 1
    }

    private func isTurn(_ wait: Wait) -> Bool {
        if case .turn = wait { true } else { false }
    }

    /// Whether `wait` (not a writer's) is over.
    private func isDone(_ wait: Wait, now: UploadClock.Instant?) -> Bool {
        switch wait {
        case .turn: false
        case .readable(let offset, let start, let deadline):
            if let deadline, let now, now >= deadline { true } else { isReadable(from: offset, start: start) }
        case .acknowledged(let offset): acknowledged >= offset || failure != nil
        case .liveInput: written > acknowledged || inputEnded || failure != nil
        case .storageRoom(let since, let retryAt):
            if let now, now >= retryAt { true } else { acknowledged > since || isClosed }
        }
    }

    /// After a change: wakes the writers the line lets go on and the waiters whose wait is over.
    private mutating func settle(_ actions: inout Actions) {
        assert(
            acknowledged <= boundary && boundary <= written && written - acknowledged <= capacity,
            "cursors out of order: \(acknowledged) \(boundary) \(written)")
        guard !waiters.isEmpty else { return }
        for (waiterID, outcome) in writers.settle(free: free, closed: isClosed) {
            guard let index = waiters.firstIndex(where: { $0.id == waiterID }) else { continue }
            actions.wake.append((waiters.remove(at: index).wake, .turn(outcome)))
        }
        wakeWaiters(&actions, now: nil)
        updateTimer(&actions)
    }

    /// Wakes the waiters (not the writers) whose wait is over (`now`: deadlines count too).
    private mutating func wakeWaiters(_ actions: inout Actions, now: UploadClock.Instant?) {
        guard waiters.contains(where: { isDone($0.wait, now: now) }) else { return }
        var kept: [Waiter] = []
        for waiter in waiters {
            if isDone(waiter.wait, now: now) {
                actions.wake.append((waiter.wake, .ready))
            } else {
                kept.append(waiter)
            }
        }
        if kept.count < waiters.count { waiters = kept }
    }

    /// Asks for a timer at the earliest deadline waited for, when that is not the one kept.
    private mutating func updateTimer(_ actions: inout Actions) {
        var earliest: UploadClock.Instant?
        for waiter in waiters {
            let deadline: UploadClock.Instant? =
                switch waiter.wait {
                case .readable(_, _, let deadline): deadline
                case .storageRoom(_, let retryAt): retryAt
                case .turn, .acknowledged, .liveInput: nil
                }
            if let deadline, earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
        }
        guard earliest != timer.deadline else { return }
        timer = Timer(deadline: earliest, generation: timer.generation + 1)
        actions.timer = timer
    }
}
