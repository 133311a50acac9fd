/// The state of one replay buffer as a pure state machine: the cursors, the record splits,
/// where the input stands (``Input``), the turn holder's write (``Write``, with bytes held
/// for room on the storage), the writers' line, and one table of waiters (``Waiters``). Each
/// event is a mutating method that returns what its owner must do next (``Actions``): tell the
/// storage this, say that, arm the deadline timer then, wake these waiters with these
/// outcomes. It never blocks, reads no clock (instants come with the events), does no I/O and
/// resumes nothing itself, so it is tested by feeding it events (`ReplayLogTests`).
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
/// Thread safety: a value type; ``ReplayLogShell`` keeps it under the buffer's one lock.
struct ReplayLog<Wake> {
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
    /// Where the writing side stands.
    private(set) var input = Input.open
    /// The turn holder's write between filling and counting.
    private(set) var write = Write.idle
    /// Why the log failed (the first failure wins): writes, reads and waits end with it.
    private(set) var failure: StreamUpError?
    /// The writers: whose turn it is, and the waiter ids of those in line.
    private(set) var writers = WriterLine<Int>()
    /// Every waiter, in the order they came, and the deadline timer.
    private(set) var waiters = Waiters()
    /// Writers whose waits end at once from now on (a thread writer's producer was cancelled).
    private var cancelledWriters: Set<Int> = []
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

    // MARK: Writing

    /// The writer whose turn it is asks for free space (`now`: for the pause count): free
    /// space at the written offset, or its own bytes waiting for room on the storage, or, once
    /// nothing more is written, why not (bytes it held are then dropped).
    mutating func reserve(now: ContinuousClock.Instant) -> Reservation {
        if isClosed {
            var actions = Actions()
            if case .held(let held) = write {
                // A stop or a failure while bytes waited for room: they are not kept.
                endWrite(&actions)
                if !held.reported { actions.heldDropped = held.bytes.count }
            }
            return .closed(failure ?? ReplayBuffer.ended, actions)
        }
        if free == 0 {
            startPause(now: now)
        } else if let since = pausedSince {
            pausedTime += now - since
            pausedSince = nil
        }
        if case .held(let held) = write { return .held(held.bytes) }
        return .space(offset: written, free: free, boundary: boundary)
    }

    /// The holder filled bytes and is about to commit them: false when a stop that drops the
    /// unfinished record came meanwhile (bytes read after it are not taken).
    mutating func beginCommit() -> Bool {
        switch input {
        case .open, .ended(.reached), .stopping(.keeps), .ended(.stopped(.keeps)): break
        case .stopping(.dropped), .stopping(.dropsAfterWrite), .ended(.stopped(.dropped)), .ended(.stopped(.dropsAfterWrite)): return false
        }
        guard case .idle = write else { preconditionFailure("a commit began during another: \(write)") }
        write = .committing
        return true
    }

    /// The holder's bytes are committed: they are counted at the written offset, with their
    /// record ends, newlines, write time and source.
    mutating func committed(_ bytes: Filled) -> Actions {
        precondition(bytes.offset == written && bytes.count <= free, "a commit outside the free space")
        switch write {
        case .committing, .held: break
        case .idle: preconditionFailure("a commit that did not begin")
        }
        written += bytes.count
        // Never back: a finish may have made what was written a record while these were read.
        boundary = max(boundary, bytes.boundary)
        if !bytes.splits.isEmpty {
            splits += bytes.splits
            splitRecords += bytes.splits.count
        }
        lines += bytes.lines
        writeTimes.wrote(at: bytes.offset, time: bytes.time)
        if tracksSources, let mark = bytes.mark { index.append(at: bytes.offset, count: bytes.count, mark: mark) }
        var actions = Actions()
        endWrite(&actions)
        settle(&actions)
        return actions
    }

    /// The storage had no room for the holder's bytes: they wait, with it, until `retryAt` or
    /// an acknowledgement past the acknowledged offset now.
    mutating func holdForRoom(_ bytes: Filled, retryAt: UploadClock.Instant) {
        let reported: Bool
        switch write {
        case .committing: reported = false
        case .held(let held): reported = held.reported
        case .idle: preconditionFailure("bytes held that were not being committed")
        }
        write = .held(Held(bytes: bytes, retryAt: retryAt, acknowledged: acknowledged, reported: reported))
    }

    /// The storage failed the holder's commit for good: the log fails with `error`.
    mutating func commitFailed(_ error: StreamUpError) -> Actions {
        var actions = Actions()
        endWrite(&actions)
        if failure == nil { failure = error }
        settle(&actions)
        return actions
    }

    /// The holder takes back its bytes held for room without a word (it must not wait, and
    /// still has them: it is told that the storage is full).
    mutating func giveBack() -> Actions {
        var actions = Actions()
        if case .held = write { endWrite(&actions) }
        return actions
    }

    /// Source positions skipped at the written offset.
    mutating func skip(_ mark: SourceMark) {
        if tracksSources { index.skip(at: written, mark: mark) }
    }

    /// The holder's write ended (counted, failed, dropped or given back): a stop that came
    /// during it drops the unfinished record now.
    private mutating func endWrite(_ actions: inout Actions) {
        write = .idle
        switch input {
        case .stopping(.dropsAfterWrite):
            input = .stopping(.dropped)
            actions.dropped = takeUnfinished()
        case .ended(.stopped(.dropsAfterWrite)):
            input = .ended(.stopped(.dropped))
            actions.dropped = takeUnfinished()
        case .open, .stopping, .ended: break
        }
    }

    // MARK: Ending

    /// The input has ended (`stopped`: a stop, not the input's own end). Its own end makes the
    /// last partial record a record and tells the storage where it is. A stop keeps what was
    /// read when the bytes are not lines, or when source positions are saved (those bytes are
    /// where the saved position stands); else it drops the unfinished record: at once, or when
    /// the write under way ends. Bytes held for room on the storage are dropped with a stop.
    /// Whatever a stop drops is said before readers see the end (``Actions/endsStop``).
    mutating func finish(stopped: Bool) -> Actions {
        var actions = Actions()
        switch input {
        case .open: break
        case .ended(.reached), .ended(.stopped(.keeps)):
            // What is written is records, a read that went in after the end too.
            boundary = written
            settle(&actions)
            return actions
        case .stopping, .ended(.stopped(.dropped)), .ended(.stopped(.dropsAfterWrite)):
            return actions
        }
        guard stopped else {
            input = .ended(.reached)
            boundary = written
            actions.inputEndedAt = written
            settle(&actions)
            return actions
        }
        let stop: Stop
        if records == .rawBytes || tracksSources {
            stop = .keeps
            boundary = written
        } else if case .idle = write {
            stop = .dropped
            actions.dropped = takeUnfinished()
        } else {
            stop = .dropsAfterWrite
        }
        if case .held(var held) = write, !held.reported {
            held.reported = true
            write = .held(held)
            actions.heldDropped = held.bytes.count
        }
        if actions.dropped != nil || actions.heldDropped != nil {
            input = .stopping(stop)
            actions.endsStop = true
        } else {
            input = .ended(.stopped(stop))
            settle(&actions)
        }
        return actions
    }

    /// A stop's losses have been said: readers see the end.
    mutating func stopReported() -> Actions {
        guard case .stopping(let stop) = input else { preconditionFailure("a stop reported while the input is \(input)") }
        input = .ended(.stopped(stop))
        var actions = Actions()
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
    private mutating func takeUnfinished() -> Range<Int>? {
        let end = max(boundary, splits.last ?? boundary)
        guard written > end else { return nil }
        defer { written = end }
        return end..<written
    }

    // MARK: Acknowledging

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

    // MARK: Waiting

    /// A new waiter's name in the table.
    mutating func newWaiterID() -> Int { waiters.newID() }

    /// Adds a waiter for `wait`, woken by `wake`; it is woken at once (in the actions) when what
    /// it waits for is there, its deadline passed at `now`, or `cancelled` (its task was).
    /// `id` comes from ``newWaiterID()`` (taken before, so that a cancel can name it).
    mutating func wait(_ id: Int, for wait: Wait, wake: Wake, now: UploadClock.Instant? = nil, cancelled: Bool = false) -> Actions {
        if case .turn = wait { preconditionFailure("writers wait through enterLine") }
        var actions = Actions()
        if cancelled || isDone(wait, now: now) {
            actions.wake.append((wake, .ready))
        } else {
            waiters.add(Waiters.Waiter(id: id, wait: wait, wake: wake))
            waiters.updateTimer(&actions)
        }
        return actions
    }

    /// Wakes waiter `id` at once (its task was cancelled); nothing when it was woken already.
    mutating func cancelWait(_ id: Int) -> Actions {
        var actions = Actions()
        if let waiter = waiters.remove(id) {
            if case .turn(let writer) = waiter.wait {
                _ = writers.remove(writer)
                actions.wake.append((waiter.wake, .cancelled))
                // The line may move on without it.
                settle(&actions)
            } else {
                actions.wake.append((waiter.wake, .ready))
            }
        }
        waiters.updateTimer(&actions)
        return actions
    }

    /// The timer of `generation` went off at `now`: waiters whose deadline passed are woken.
    mutating func deadlinePassed(generation: Int, now: UploadClock.Instant) -> Actions {
        var actions = Actions()
        guard waiters.timerFired(generation: generation) else { return actions }
        wakeWaiters(&actions, now: now)
        waiters.updateTimer(&actions)
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
        let waiterID = waiters.newID()
        let entry = WriterLine<Int>.Entry(id: id, needs: needs, patience: patience, waiter: waiterID)
        if holding { writers.waitForSpace(entry) } else { writers.enqueue(entry) }
        waiters.add(Waiters.Waiter(id: waiterID, wait: .turn(writer: id), wake: wake))
        settle(&actions)
        return actions
    }

    /// Writer `id` gives the turn back; the next in line gets it when it can go on. Bytes it
    /// held for room on the storage are dropped (it was stopped or cancelled), and said.
    mutating func leaveTurn(_ id: Int) -> Actions {
        var actions = Actions()
        if writers.holder == id, case .held(let held) = write {
            endWrite(&actions)
            if !held.reported { actions.heldDropped = held.bytes.count }
        }
        writers.leave(id)
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

    private mutating func startPause(now: ContinuousClock.Instant) {
        guard pausedSince == nil else { return }
        pausedSince = now
        pauses += 1
    }

    /// After a change: wakes the writers the line lets go on and the waiters whose wait is over.
    private mutating func settle(_ actions: inout Actions) {
        assert(
            acknowledged <= boundary && boundary <= written && written - acknowledged <= capacity,
            "cursors out of order: \(acknowledged) \(boundary) \(written)")
        guard !waiters.isEmpty else { return }
        for (waiterID, outcome) in writers.settle(free: free, closed: isClosed) {
            guard let waiter = waiters.remove(waiterID) else { continue }
            actions.wake.append((waiter.wake, .turn(outcome)))
        }
        wakeWaiters(&actions, now: nil)
        waiters.updateTimer(&actions)
    }

    /// Wakes the waiters (not the writers) whose wait is over (`now`: deadlines count too).
    private mutating func wakeWaiters(_ actions: inout Actions, now: UploadClock.Instant?) {
        guard waiters.entries.contains(where: { isDone($0.wait, now: now) }) else { return }
        var kept: [Waiters.Waiter] = []
        for waiter in waiters.entries {
            if isDone(waiter.wait, now: now) {
                actions.wake.append((waiter.wake, .ready))
            } else {
                kept.append(waiter)
            }
        }
        waiters.keep(kept)
    }
}

extension ReplayLog: Sendable where Wake: Sendable {}
