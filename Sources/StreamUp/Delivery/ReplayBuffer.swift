import Foundation
import StreamUpHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one buffer of an upload: producers write into it, and either each segment request
/// reads a window of it and bytes stay until the server acknowledges them (acknowledged
/// segments), or one live request reads it as a stream and each byte is released as the
/// connection takes it (``readLive(into:blocking:)``, one chunked request).
///
///     acknowledged           boundary         written
///          |== unacknowledged, complete records ==|-- partial record --|.... free ....|
///          ^ freed by acknowledgements            ^ readable up to here               ^ acknowledged + capacity
///     invariant: acknowledged <= boundary <= written <= acknowledged + capacity
///
/// - Writing: any number of writers (tasks and threads, through one ``StreamWriter``) take
///   turns in one line (`WriterLine`): the writer whose turn it is fills free space in place;
///   with a full buffer it waits, keeping its turn, until an acknowledgement (or a live read)
///   frees the bytes it needs (acknowledgements come once per request, so there is no storm).
///   Record boundaries are found as bytes are written (``RecordMode``); a record that grows
///   past `maxRecord` is split there, and counted.
/// - Cutting: the delivery task cuts each segment from the acknowledged offset, whole records
///   only, as far as its ``SegmentPlan`` allows (``cutSegment(from:limits:)``), suspending (never
///   blocking a thread) until there is a record, the input ends, the buffer fails, or the plan's
///   deadline; then reads the cut bytes through ``WindowSource``, which never waits.
/// - Acknowledging: frees the bytes below an offset, wakes a waiting producer, and returns the
///   source positions the freed bytes stand for (``SourceIndex``).
/// - Reading live (one request): the request's reader (URLSession's thread) blocks until there
///   is a byte, the end or a failure, takes the bytes from the acknowledged offset and
///   acknowledges them at once: nothing can be sent again. A waiting writer is woken once
///   `spaceWatermark` bytes are free, so one wake-up refills a good part of the buffer.
///
/// Bytes are copied in and out outside the lock: the writer whose turn it is only touches free
/// space and readers only touch unacknowledged bytes below the boundary, which the cursors
/// (changed under the lock) keep apart.
///
/// Thread safety: every mutable field is in `state`, guarded by `lock` (an `NSCondition`, on
/// which a live reader and writer threads waiting in line sleep); writers in turn, one delivery
/// task that cuts and reads (or one live reading thread), acknowledgements and waits from any
/// task. Continuations are resumed after the lock is released.
package final class ReplayBuffer: @unchecked Sendable {
    /// Everything that changes, guarded by `lock`.
    struct State {
        var acknowledged: Int
        var written: Int
        var boundary: Int
        /// Boundaries made by splitting over-long records, above `acknowledged`, ascending.
        var splits: [Int] = []
        var splitRecords = 0
        var inputEnded = false
        /// The input itself ended, not a stop: a last record without `\n` is whole.
        var inputReachedEnd = false
        /// A producer's write is between committing its bytes and counting them.
        var writing = false
        /// A stop dropped the unfinished record: bytes read after it are not taken.
        var stoppedDropping = false
        /// A stop came during a write: that write drops the unfinished record when it ends.
        var dropsUnfinishedAfterWrite = false
        var failure: StreamUpError?
        /// A live reader sleeps on `lock` until a write, the end or a failure.
        var readerWaiting = false
        /// The writers: whose turn it is, who waits for it or for space.
        var writers = WriterLine<WriterWaiter>()
        /// What became of each parked writer thread that was woken (it sleeps on `lock`).
        var threadOutcomes: [Int: WriterLine<WriterWaiter>.Outcome] = [:]
        /// Writer threads whose producer was cancelled: their waits end at once.
        var cancelledThreads: Set<Int> = []
        /// Writer threads sleeping on `lock`.
        var parkedThreads = 0
        var readableWaiters: [ReadableWaiter] = []
        var nextWaiterID = 0
        var acknowledgedWaiters: [(offset: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var index = SourceIndex()
        var pausedSince: ContinuousClock.Instant?
        var pauses = 0
        var pausedTime: Duration = .zero
        /// Newlines written in this run (lines mode only): the lines read, for `--metrics`.
        var lines = 0
        /// When the held bytes were written, for the age of the oldest (`--metrics`).
        var writeTimes = WriteTimes()
    }

    /// How a writer waiting in line is woken: a task's continuation, or a thread parked on `lock`.
    enum WriterWaiter {
        case task(CheckedContinuation<Void, Error>)
        case thread(id: Int)
    }

    /// A task suspended in ``waitUntilReadable(from:until:)``.
    struct ReadableWaiter {
        var id: Int
        var offset: Int
        var continuation: CheckedContinuation<Void, Never>
    }

    let storage: any ReplayStorage
    let records: RecordMode
    /// The longest record; longer ones are split.
    let maxRecord: Int
    /// The stream offset of this run's first producer byte (what a spool held comes before).
    let producerStart: Int
    /// Whether acknowledgements report source positions (kept only when someone saves them).
    let tracksSources: Bool
    /// A writer waiting for space is woken once this much is free (or at the end or a failure).
    let spaceWatermark: Int
    /// What segment deadlines are measured on (write times and pauses stay on the continuous
    /// clock: they are reported as real ages).
    let clock: UploadClock
    private let lock = NSCondition()
    private var state: State
    /// Guarded by `lock`, see ``onDroppedAtStop``.
    private var droppedAtStop: (@Sendable (Int) -> Void)?
    /// Serializes acknowledgements to the storage (the delivery task and the checkpoint task).
    private let releasing = NSLock()
    /// The acknowledged offset the storage was last given, guarded by `releasing`.
    private var toldStorage: Int

    /// A buffer over `storage`, which already holds the bytes `acknowledged..<written` (a
    /// recovered spool; both 0 for a new stream).
    /// - Parameters:
    ///   - tracksSources: remember which source positions the bytes stand for;
    ///   - keepsSourceEntries: per written piece, so acknowledgements report positions (bytes in
    ///     memory); without it only where each source stands at the written end (a spool,
    ///     whose own index keeps the pieces on disk).
    ///   - spaceWatermark: how much must be free before a writer waiting for space is woken
    ///     (1 for segments, whose acknowledgements free a segment at a time; more for a live
    ///     reader, which frees a read at a time).
    ///   - clock: what a segment's time limit is measured on.
    init(
        storage: any ReplayStorage, records: RecordMode, maxRecord: Int, acknowledged: Int = 0, written: Int = 0,
        tracksSources: Bool = false, keepsSourceEntries: Bool = true, spaceWatermark: Int = 1, clock: UploadClock = .continuous
    ) {
        precondition(maxRecord > 0 && maxRecord <= storage.capacity, "a record must fit in the buffer")
        precondition(0 <= acknowledged && acknowledged <= written && written - acknowledged <= storage.capacity, "held bytes exceed the storage")
        self.storage = storage
        self.records = records
        self.maxRecord = maxRecord
        self.producerStart = written
        self.toldStorage = acknowledged
        self.tracksSources = tracksSources
        self.spaceWatermark = max(1, min(spaceWatermark, storage.capacity))
        self.clock = clock
        // What an earlier run left is whole records: its requests ended on boundaries.
        self.state = State(acknowledged: acknowledged, written: written, boundary: written)
        self.state.index = SourceIndex(keepsEntries: keepsSourceEntries)
        // What an earlier run left is at least as old as this run.
        if written > acknowledged { self.state.writeTimes.wrote(at: acknowledged, time: .now) }
    }

    /// A buffer in memory holding at most `capacity` bytes.
    convenience init(
        capacity: Int, records: RecordMode = .rawBytes, maxRecord: Int? = nil, tracksSources: Bool = false, spaceWatermark: Int = 1
    ) {
        let storage = MemoryReplayStorage(capacity: capacity)
        self.init(
            storage: storage, records: records, maxRecord: maxRecord ?? storage.capacity, tracksSources: tracksSources,
            spaceWatermark: spaceWatermark)
    }

    /// A buffer in memory for one live reader: a waiting writer is woken once a quarter of it
    /// (at most 256 KiB) is free.
    static func live(capacity: Int) -> ReplayBuffer {
        ReplayBuffer(capacity: capacity, spaceWatermark: min(capacity / 4, 256 * 1024))
    }

    var capacity: Int { storage.capacity }

    func withState<T, Failure: Error>(_ body: (inout State) throws(Failure) -> T) throws(Failure) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }

    /// Offset of the first byte not yet acknowledged.
    var acknowledgedOffset: Int { withState { $0.acknowledged } }
    /// Offset one past the last byte written.
    var writtenOffset: Int { withState { $0.written } }
    /// Bytes held (unacknowledged).
    var heldCount: Int { withState { $0.written - $0.acknowledged } }
    /// Whether the input has ended and every byte it had is written.
    var isInputEnded: Bool { withState { $0.inputEnded } }
    /// Records longer than `maxRecord` that were split.
    var splitRecords: Int { withState { $0.splitRecords } }
    /// Lines (newlines) written in this run; 0 unless records are lines.
    var linesWritten: Int { withState { $0.lines } }

    /// How long ago the oldest unacknowledged byte was written (at most ``WriteTimes/granularity``
    /// more than the truth); zero when every byte is acknowledged.
    func oldestHeldAge(now: ContinuousClock.Instant = .now) -> Duration {
        withState { state in
            guard state.written > state.acknowledged, let time = state.writeTimes.time(of: state.acknowledged) else { return .zero }
            return max(.zero, now - time)
        }
    }
    /// How often the producer found the buffer full, and for how long it waited in all.
    var pauses: (count: Int, time: Duration) {
        withState { state in
            let ongoing = state.pausedSince.map { ContinuousClock.now - $0 } ?? .zero
            return (state.pauses, state.pausedTime + ongoing)
        }
    }

    // MARK: Writing (the producer's side)

    /// Offers free space (one contiguous piece of at most `maxLength` bytes) to `fill`, which
    /// returns how many bytes it put there; those bytes came from `mark` (nil: no source to
    /// remember). Returns what `fill` returned, or nil without calling it when there is no space.
    /// Only the writer whose turn it is calls it; it never waits, apart from what `fill` does.
    /// - Throws: the buffer's failure (or its end) instead of calling `fill`; what `fill` threw.
    func withWritableSpace(maxLength: Int, mark: SourceMark?, _ fill: (UnsafeMutableRawBufferPointer) throws -> Int) throws -> Int? {
        let (offset, free, boundary) = try withState { state throws(StreamUpError) -> (Int, Int, Int) in
            if let failure = state.failure { throw failure }
            guard !state.inputEnded else { throw Self.ended }
            let free = storage.capacity - (state.written - state.acknowledged)
            if free == 0 {
                if state.pausedSince == nil {
                    state.pausedSince = .now
                    state.pauses += 1
                }
            } else if let since = state.pausedSince {
                state.pausedTime += ContinuousClock.now - since
                state.pausedSince = nil
            }
            return (state.written, free, state.boundary)
        }
        if free == 0 { return nil }
        // The last lock of a counted write settles what a stop owes; only an early end (nothing
        // read, a failed commit, a read after a stop) takes the lock again for it.
        var settled = false
        defer {
            // A write that ended early still owes a stop its drop.
            if !settled { settleEarlyEnd() }
        }
        let space = storage.writableSpace(at: offset, maxLength: min(maxLength, free))
        let count = try fill(space)
        precondition(count >= 0 && count <= space.count, "filled \(count) of \(space.count) bytes")
        guard count > 0 else { return 0 }
        // A read that returned after a stop dropped the unfinished record: its bytes would
        // continue a record no longer there.
        let afterStop = withState { state -> Bool in
            if state.stoppedDropping { return true }
            state.writing = true
            return false
        }
        if afterStop {
            onDroppedAtStop?(count)
            throw Self.ended
        }
        let found =
            records == .lines
            ? Self.boundaries(in: UnsafeRawBufferPointer(rebasing: space[..<count]), at: offset, after: boundary, maxRecord: maxRecord)
            : (boundary: offset + count, splits: [])
        let lines = records == .lines ? Self.newlineCount(in: UnsafeRawBufferPointer(rebasing: space[..<count])) : 0
        let now = ContinuousClock.now
        do throws(StreamUpError) {
            try storage.commit(space, count: count, at: offset, mark: mark)
        } catch {
            failWriting(error)
            throw error
        }
        let (waiters, dropped) = withState { state -> ([CheckedContinuation<Void, Never>], Range<Int>?) in
            state.written += count
            state.boundary = found.boundary
            state.splits += found.splits
            state.splitRecords += found.splits.count
            state.lines += lines
            state.writeTimes.wrote(at: offset, time: now)
            if tracksSources, let mark { state.index.append(at: offset, count: count, mark: mark) }
            let dropped = state.dropsUnfinishedAfterWrite ? Self.dropUnfinished(&state) : nil
            state.writing = false
            if state.readerWaiting { lock.broadcast() }
            return (takeReadableWaiters(&state), dropped)
        }
        settled = true
        if let dropped { discard(dropped) }
        for waiter in waiters { waiter.resume() }
        return count
    }

    /// A write that ended before counting its bytes: no longer writing, and the drop a stop
    /// asked for during it is done now.
    private func settleEarlyEnd() {
        let dropped = withState { state -> Range<Int>? in
            state.writing = false
            return state.dropsUnfinishedAfterWrite ? Self.dropUnfinished(&state) : nil
        }
        if let dropped { discard(dropped) }
    }

    /// Where the bytes in `range` came from (entries are kept only in memory, with sources
    /// tracked; empty otherwise), in stream order.
    func sourceEntries(overlapping range: Range<Int>) -> [SourceIndex.Entry] {
        withState { $0.index.entries(overlapping: range) }
    }

    func skip(_ mark: SourceMark) {
        guard tracksSources else { return }
        withState { state in state.index.skip(at: state.written, mark: mark) }
    }

    var writableCount: Int {
        withState { isClosed($0) ? 0 : free($0) }
    }

    var failure: StreamUpError? { withState { $0.failure } }

    var bytesWritten: Int { withState { $0.written } - producerStart }

    var isFinishedWriting: Bool { withState { $0.inputEnded } }

    /// Whether the input ended and every byte of it was acknowledged.
    var isDelivered: Bool { withState { $0.inputEnded && $0.acknowledged == $0.written } }

    /// The input has ended: the last partial record becomes a record, readers get the end.
    /// `stopped`: the writing was stopped before the input's end (a signal), which the storage
    /// is not told: what it holds may end in the middle of a record.
    ///
    /// A stop in lines mode does not make the unfinished last record a record: its bytes are
    /// dropped (the rest of it is never read), and ``onDroppedAtStop`` hears how many. Not when
    /// positions are saved (`tracksSources`): those bytes are where the saved position stands.
    func finishWriting(stopped: Bool = false) {
        // The drop is said before the end is seen: a run that ends at once must not end first.
        let dropping = withState { state -> Range<Int>? in
            guard stopped, !state.inputEnded, records == .lines, !tracksSources, !state.writing else { return nil }
            state.stoppedDropping = true
            let end = max(state.boundary, state.splits.last ?? state.boundary)
            return end..<state.written
        }
        if let dropping, !dropping.isEmpty { discard(dropping) }
        var end: Int?
        change { state in
            if !state.inputEnded && !stopped {
                end = state.written
                state.inputReachedEnd = true
            }
            let dropsUnfinished = stopped && !state.inputEnded && records == .lines && !tracksSources
            state.inputEnded = true
            if let dropping {
                state.written = dropping.lowerBound
            } else if !dropsUnfinished {
                state.boundary = state.written
            } else {
                // A commit is under way: it drops the unfinished record when it ends.
                state.stoppedDropping = true
                state.dropsUnfinishedAfterWrite = true
            }
        }
        if let end { storage.inputEnded(at: end) }
    }

    /// Who hears how many bytes of an unfinished record a stop dropped.
    var onDroppedAtStop: (@Sendable (Int) -> Void)? {
        get { withState { _ in droppedAtStop } }
        set { withState { _ in droppedAtStop = newValue } }
    }

    /// Takes the bytes after the last record end out of the buffer; nil when there are none.
    private static func dropUnfinished(_ state: inout State) -> Range<Int>? {
        state.dropsUnfinishedAfterWrite = false
        let end = max(state.boundary, state.splits.last ?? state.boundary)
        guard state.written > end else { return nil }
        defer { state.written = end }
        return end..<state.written
    }

    /// Tells the storage and ``onDroppedAtStop`` about bytes a stop dropped (outside the lock).
    private func discard(_ dropped: Range<Int>) {
        storage.discard(from: dropped.lowerBound)
        onDroppedAtStop?(dropped.count)
    }

    /// Whether the input itself ended (not a stop) at the written offset.
    var inputReachedEnd: Bool { withState { $0.inputReachedEnd } }

    /// Fails the buffer (the first failure wins): writes, reads and waits end with it.
    func failWriting(_ error: StreamUpError) {
        change { state in
            if state.failure == nil { state.failure = error }
        }
    }

    /// Runs `body` under the lock, then wakes whoever the change concerns (outside the lock).
    private func change(_ body: (inout State) -> Void) {
        let (readable, acknowledged, writers) = withState { state in
            body(&state)
            if state.readerWaiting { lock.broadcast() }
            return (takeReadableWaiters(&state), takeAcknowledgedWaiters(&state), settleWriters(&state))
        }
        resume(writers)
        for waiter in readable + acknowledged { waiter.resume() }
    }

    // MARK: Writers' turns

    /// The error a write meets once the input has ended.
    static let ended = StreamUpError(.bodyStreamClosed, "the body has ended: nothing more is written")

    /// A new writer's name in the line.
    func newWriterID() -> Int {
        withState { $0.writers.newID() }
    }

    /// Takes the turn for writer `id` once `needs` bytes are free, waiting in line behind the
    /// writers that came first; one that must wait for room waits for `refill` bytes (default
    /// `needs`), so that one wake-up refills a good part of the buffer. `quick`: it gives the
    /// turn back without waiting for anything.
    /// - Throws: the buffer's failure (or its end); `CancellationError` when the task is
    ///   cancelled while in line (it then holds no turn).
    func takeTurn(_ id: Int, needs: Int, refill: Int? = nil, quick: Bool) async throws {
        if try arrive(id, needs: needs, quick: quick) { return }
        let needs = max(needs, refill ?? needs)
        try await waitInLine(id) { state, waiter in state.writers.enqueue(.init(id: id, needs: needs, patience: .waits, waiter: waiter)) }
    }

    /// The holder `id` waits, keeping its turn, until `needs` bytes are free.
    /// - Throws: the buffer's failure (or its end); `CancellationError` when cancelled.
    func waitForSpace(_ id: Int, needs: Int) async throws {
        try await waitInLine(id) { state, waiter in state.writers.waitForSpace(.init(id: id, needs: needs, patience: .waits, waiter: waiter)) }
    }

    /// Suspends the calling task in line (`enter` puts it there) until the line wakes it.
    private func waitInLine(_ id: Int, _ enter: @escaping (inout State, WriterWaiter) -> Void) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
                let woken = withState { state -> [(waiter: WriterWaiter, outcome: WriterLine<WriterWaiter>.Outcome)]? in
                    // Checked under the lock: a cancel handler that already ran found nothing to
                    // take out of the line, so this writer must not enter it.
                    if Task.isCancelled { return nil }
                    enter(&state, .task(continuation))
                    return settleWriters(&state)
                }
                guard let woken else { return continuation.resume(throwing: CancellationError()) }
                resume(woken)
            }
        } onCancel: {
            let waiter = withState { $0.writers.remove(id) }
            if case .task(let continuation) = waiter { continuation.resume(throwing: CancellationError()) }
        }
    }

    /// Takes the turn for the thread writer `id` once `needs` bytes are free, sleeping in line.
    /// - Throws: the buffer's failure (or its end); `CancellationError` once the thread's
    ///   producer was cancelled (``cancelThreadWriter(_:)``).
    func takeTurnBlocking(_ id: Int, needs: Int, refill: Int? = nil, quick: Bool) throws {
        if try arrive(id, needs: needs, quick: quick) { return }
        try parkInLine(id, needs: max(needs, refill ?? needs), patience: .waits, holding: false)
    }

    /// The thread writer `id`, holding the turn, sleeps until `needs` bytes are free.
    func waitForSpaceBlocking(_ id: Int, needs: Int) throws {
        try parkInLine(id, needs: needs, patience: .waits, holding: true)
    }

    /// Takes the turn for a writer of `needs` bytes that must not wait for space: at once, or
    /// after the writers ahead that only copy (the calling thread sleeps that long, as on a
    /// lock). Returns `.granted`, `.full`, `.busy` or `.closed`; never `.queued`.
    func tryTakeTurn(_ id: Int, needs: Int) -> WriterLine<WriterWaiter>.Outcome {
        let outcome = withState { state in
            state.writers.arrive(id, needs: needs, patience: .brief, quick: true, free: free(state), closed: isClosed(state))
        }
        guard outcome == .queued else { return outcome }
        let entry = WriterLine<WriterWaiter>.Entry(id: id, needs: needs, patience: .brief, waiter: .thread(id: id))
        return sleepInLine(id) { $0.writers.enqueue(entry) }.outcome ?? .closed
    }

    /// Puts the thread writer `id` in line and sleeps until the line wakes it.
    private func parkInLine(_ id: Int, needs: Int, patience: WriterLine<WriterWaiter>.Patience, holding: Bool) throws {
        let entry = WriterLine<WriterWaiter>.Entry(id: id, needs: needs, patience: patience, waiter: .thread(id: id))
        let (outcome, failure) = sleepInLine(id) { state in
            if holding { state.writers.waitForSpace(entry) } else { state.writers.enqueue(entry) }
        }
        switch outcome {
        case .granted: return
        case nil: throw CancellationError()
        case .closed, .queued, .full, .busy: throw failure ?? Self.ended
        }
    }

    /// Puts the thread writer `id` in line (`enter`), resumes the tasks that settles (outside the
    /// lock), and sleeps until the line wakes it. Returns its outcome (nil: its producer was
    /// cancelled, and it is out of the line) and the buffer's failure then.
    private func sleepInLine(_ id: Int, enter: (inout State) -> Void) -> (outcome: WriterLine<WriterWaiter>.Outcome?, failure: StreamUpError?) {
        lock.lock()
        defer { lock.unlock() }
        if state.cancelledThreads.contains(id) { return (nil, state.failure) }
        enter(&state)
        let tasks = settleWriters(&state)
        if !tasks.isEmpty {
            // Continuations are resumed outside the lock; this thread's outcome is kept meanwhile.
            lock.unlock()
            resume(tasks)
            lock.lock()
        }
        return (sleepUntilWoken(id), state.failure)
    }

    /// Sleeps on `lock` (held) until the thread writer `id` is woken; nil when its producer was
    /// cancelled first (it is then out of the line).
    private func sleepUntilWoken(_ id: Int) -> WriterLine<WriterWaiter>.Outcome? {
        state.parkedThreads += 1
        defer { state.parkedThreads -= 1 }
        while state.threadOutcomes[id] == nil && !state.cancelledThreads.contains(id) {
            lock.wait()
        }
        if let outcome = state.threadOutcomes.removeValue(forKey: id) { return outcome }
        _ = state.writers.remove(id)
        return nil
    }

    /// Ends the waits of the thread writer `id`, now and later, with `CancellationError`.
    func cancelThreadWriter(_ id: Int) {
        withState { state in
            state.cancelledThreads.insert(id)
            if state.parkedThreads > 0 { lock.broadcast() }
        }
    }

    /// Writer `id` gives the turn back; the next in line gets it when it can go on.
    func leaveTurn(_ id: Int) {
        let woken = withState { state in
            state.writers.leave(id)
            return settleWriters(&state)
        }
        resume(woken)
    }

    /// Writer `id` asks for the turn: whether it got it now (false: it must wait in line).
    private func arrive(_ id: Int, needs: Int, quick: Bool) throws -> Bool {
        let (outcome, failure) = withState { state in
            let outcome = state.writers.arrive(id, needs: needs, patience: .waits, quick: quick, free: free(state), closed: isClosed(state))
            // A writer that must wait for room pauses the producers (`--metrics`, progress).
            if outcome == .queued && free(state) == 0 && state.pausedSince == nil {
                state.pausedSince = .now
                state.pauses += 1
            }
            return (outcome, state.failure)
        }
        switch outcome {
        case .granted: return true
        case .queued: return false
        case .closed, .full, .busy: throw failure ?? Self.ended
        }
    }

    /// Takes the writers that can go on out of the line (under the lock): the threads among
    /// them get their outcome and a broadcast; the tasks are returned, to resume after unlocking.
    private func settleWriters(_ state: inout State) -> [(waiter: WriterWaiter, outcome: WriterLine<WriterWaiter>.Outcome)] {
        let woken = state.writers.settle(free: free(state), closed: isClosed(state))
        var tasks: [(waiter: WriterWaiter, outcome: WriterLine<WriterWaiter>.Outcome)] = []
        for (waiter, outcome) in woken {
            switch waiter {
            case .thread(let id): state.threadOutcomes[id] = outcome
            case .task: tasks.append((waiter, outcome))
            }
        }
        if tasks.count < woken.count { lock.broadcast() }
        return tasks
    }

    /// Resumes the tasks the line woke (outside the lock): granted ones go on, the rest throw
    /// the buffer's failure (or its end).
    private func resume(_ woken: [(waiter: WriterWaiter, outcome: WriterLine<WriterWaiter>.Outcome)]) {
        guard !woken.isEmpty else { return }
        let failure = self.failure
        for case (.task(let continuation), let outcome) in woken {
            if outcome == .granted {
                continuation.resume()
            } else {
                continuation.resume(throwing: failure ?? Self.ended)
            }
        }
    }

    private func free(_ state: State) -> Int {
        storage.capacity - (state.written - state.acknowledged)
    }

    private func isClosed(_ state: State) -> Bool {
        state.failure != nil || state.inputEnded
    }

    // MARK: Reading live (one request's side)

    /// Copies bytes from the acknowledged offset into `destination` and acknowledges them: the
    /// connection has them, and nothing is sent again. A `blocking` read sleeps (this thread:
    /// URLSession's reader, DesignNotes, platform fact 3) until a byte, the end or a failure.
    /// - Returns: the bytes copied, `.end` once the input ended and all was read, or
    ///   `.wouldBlock` (only when not `blocking`) when nothing is there yet.
    /// - Throws: the buffer's failure (a cancel, the producer's failure, the request's end).
    func readLive(into destination: UnsafeMutableRawBufferPointer, blocking: Bool) throws(StreamUpError) -> BodyRead {
        // The wait works on `state` directly, never through an `inout` copy: the writer
        // changes `state` while this thread sleeps and must see `readerWaiting`.
        lock.lock()
        while blocking && state.written == state.acknowledged && !state.inputEnded && state.failure == nil {
            state.readerWaiting = true
            lock.wait()
            state.readerWaiting = false
        }
        let (offset, held, ended, failure) = (state.acknowledged, state.written - state.acknowledged, state.inputEnded, state.failure)
        lock.unlock()
        if let failure { throw failure }
        guard held > 0, !destination.isEmpty else { return ended && held == 0 ? .end : .wouldBlock }
        let count = try storage.read(at: offset, into: UnsafeMutableRawBufferPointer(rebasing: destination[..<min(destination.count, held)]))
        acknowledge(upTo: offset + count)
        return .bytes(count)
    }

    /// Sleeps until a live read would find something (a byte, the end, a failure) or `deadline`
    /// passes; returns whether something is there. For a reader with work of its own due at a
    /// time (a multiline record's timeout, `FormattingProducer`).
    func waitForLiveInput(until deadline: Date) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        while state.written == state.acknowledged && !state.inputEnded && state.failure == nil {
            state.readerWaiting = true
            let signalled = lock.wait(until: deadline)
            state.readerWaiting = false
            if !signalled { return state.written > state.acknowledged || state.inputEnded || state.failure != nil }
        }
        return true
    }

    // MARK: Waiting (the delivery task's side)

    /// Suspends until a segment cut at `offset` would find something new: a whole record past
    /// it, the end of the input, a full buffer, or a failure; or until `deadline` passes, or
    /// the task is cancelled. Only the task waits: no thread blocks.
    func waitUntilReadable(from offset: Int, until deadline: UploadClock.Instant? = nil) async {
        let id = withState { state in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        // The deadline and a cancel resume the waiter by its id; both check under the lock, so
        // neither can come between the check below and the waiter's entry and be missed.
        let timer = deadline.map { deadline in
            Task { [weak self, clock] in
                try? await clock.sleep(until: deadline)
                self?.resumeWaiter(id)
            }
        }
        defer { timer?.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = withState { state -> Bool in
                    if isReadable(state, from: offset) || Task.isCancelled { return true }
                    if let deadline, clock.now >= deadline { return true }
                    state.readableWaiters.append(ReadableWaiter(id: id, offset: offset, continuation: continuation))
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            resumeWaiter(id)
        }
    }

    private func resumeWaiter(_ id: Int) {
        let waiter = withState { state -> ReadableWaiter? in
            guard let index = state.readableWaiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.readableWaiters.remove(at: index)
        }
        waiter?.continuation.resume()
    }

    /// Suspends until everything below `offset` is acknowledged, or the buffer failed.
    func waitUntilAcknowledged(_ offset: Int) async {
        await withCheckedContinuation { continuation in
            let ready = withState { state -> Bool in
                if state.acknowledged >= offset || state.failure != nil { return true }
                state.acknowledgedWaiters.append((offset, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private func isReadable(_ state: State, from offset: Int) -> Bool {
        state.boundary > offset || state.inputEnded || state.failure != nil
            || state.written - state.acknowledged >= storage.capacity
    }

    private func takeReadableWaiters(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        guard !state.readableWaiters.isEmpty else { return [] }
        var ready: [CheckedContinuation<Void, Never>] = []
        var waiting: [ReadableWaiter] = []
        for waiter in state.readableWaiters {
            if isReadable(state, from: waiter.offset) { ready.append(waiter.continuation) } else { waiting.append(waiter) }
        }
        state.readableWaiters = waiting
        return ready
    }

    private func takeAcknowledgedWaiters(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        guard !state.acknowledgedWaiters.isEmpty else { return [] }
        let done = state.failure != nil
        let acknowledged = state.acknowledged
        var ready: [CheckedContinuation<Void, Never>] = []
        state.acknowledgedWaiters.removeAll { waiter in
            guard acknowledged >= waiter.offset || done else { return false }
            ready.append(waiter.continuation)
            return true
        }
        return ready
    }

    // MARK: Acknowledging

    /// Frees the bytes below `offset` (the server holds them) and returns the source positions
    /// they stand for (empty unless the buffer tracks sources). The storage is told first,
    /// outside the lock (it may release their room: a memory ring drops their pages, a spool
    /// deletes files up to `releasable` once a saved state caught up), and only then is the
    /// room handed to the writer, so nothing is released under a write.
    @discardableResult
    func acknowledge(upTo offset: Int, releasingBelow releasable: Int? = nil) -> [SourceID: Int64] {
        let (newStart, written) = withState { (min(max(offset, $0.acknowledged), $0.boundary), $0.written) }
        tellStorage(acknowledged: newStart, releasable: min(newStart, releasable ?? newStart), written: written)
        var positions: [SourceID: Int64] = [:]
        change { state in
            guard newStart > state.acknowledged else { return }
            state.acknowledged = newStart
            state.splits.removeAll { $0 <= newStart }
            state.writeTimes.acknowledge(upTo: newStart)
            if tracksSources { positions = state.index.acknowledge(upTo: newStart) }
        }
        return positions
    }

    /// Lets the storage free what is below `offset` (at most the acknowledged offset); a spool
    /// deletes files once the saved positions cover them too.
    func releaseStorage(below offset: Int) {
        let (acknowledged, written) = withState { ($0.acknowledged, $0.written) }
        tellStorage(acknowledged: acknowledged, releasable: min(offset, acknowledged), written: written)
    }

    /// Storage calls happen outside the state lock (a spool writes and deletes files, a memory
    /// ring calls `madvise`); only the delivery task (or a live reader) and the checkpoint task
    /// make them, one at a time: `releasing` serializes them and is held across those system
    /// calls on purpose. The storage never sees its acknowledged offset go back (two
    /// acknowledgements may pass each other between this and the state change). No callback
    /// runs under it, no other lock is taken inside it, and the producer never waits for it.
    private func tellStorage(acknowledged: Int, releasable: Int, written: Int) {
        releasing.lock()
        defer { releasing.unlock() }
        let acknowledged = max(acknowledged, toldStorage)
        toldStorage = acknowledged
        do throws(StreamUpError) {
            try storage.acknowledge(upTo: acknowledged, releasingBelow: releasable, written: written)
        } catch {
            failWriting(error)
        }
    }

    /// Cuts the segment from `offset` (the acknowledged offset) that `limits` allow: whole
    /// records, up to the size limit, the time limit (from its first byte), the record limit,
    /// a full buffer, or the input's end (``SegmentPlan``). While the plan waits for records the
    /// task suspends (``waitUntilReadable(from:until:)``); the producer keeps writing meanwhile.
    /// - Returns: the stream range the segment holds (empty only when the input ended).
    /// - Throws: the buffer's failure (a cancel fails it), or `CancellationError`.
    func cutSegment(from offset: Int, limits: SegmentLimits) async throws -> Range<Int> {
        var plan = SegmentPlan<UploadClock.Instant>(start: offset, limits: limits)
        var position = offset
        while true {
            try Task.checkCancellation()
            if let failure { throw failure }
            switch decide(&plan, at: position, seesFullBuffer: true) {
            case .send(let end):
                position = end
            case .end:
                return offset..<position
            case .wait(let deadline):
                await waitUntilReadable(from: plan.wakeOffset(at: position), until: deadline)
            }
        }
    }

    /// The records a segment from `offset` with `limits` would carry now, without waiting (for
    /// setting aside a segment whose last attempt carried nothing).
    func segmentRange(from offset: Int, limits: SegmentLimits) -> Range<Int> {
        var plan = SegmentPlan<UploadClock.Instant>(start: offset, limits: limits)
        var position = offset
        while case .send(let end) = decide(&plan, at: position, seesFullBuffer: false) {
            position = end
        }
        return offset..<position
    }

    /// One step of `plan` for a cut at `position`, decided under the lock. A cut that
    /// `seesFullBuffer` ends at a boundary when the buffer is full, so that the
    /// acknowledgement frees room.
    private func decide(_ plan: inout SegmentPlan<UploadClock.Instant>, at position: Int, seesFullBuffer: Bool)
        -> SegmentPlan<UploadClock.Instant>.Decision
    {
        withState { state in
            let available = SegmentPlan<UploadClock.Instant>.Available(
                boundary: state.boundary, inputEnded: state.inputEnded,
                bufferFull: seesFullBuffer && state.written - state.acknowledged >= storage.capacity)
            let boundaries = BufferBoundaries(storage: storage, records: records, splits: state.splits, end: state.boundary)
            return plan.decide(at: position, available, now: clock.now, boundaries: boundaries)
        }
    }

    /// Hands the held bytes `range` to `body` in pieces (for a dead letter).
    func copy(_ range: Range<Int>, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        precondition(range.lowerBound >= acknowledgedOffset && range.upperBound <= writtenOffset, "copying bytes that are not held")
        var piece = [UInt8](repeating: 0, count: min(range.count, 256 * 1024))
        var offset = range.lowerBound
        while offset < range.upperBound {
            let count = try piece.withUnsafeMutableBytes { bytes in
                try storage.read(at: offset, into: UnsafeMutableRawBufferPointer(rebasing: bytes[..<min(bytes.count, range.upperBound - offset)]))
            }
            try piece.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            offset += count
        }
    }

    /// Where each source stands at the written end (what a spool holds), if sources are tracked.
    var latestSourcePositions: (offset: Int, positions: [SourceID: Int64]) {
        withState { ($0.written, $0.index.latest) }
    }

    // MARK: Helpers

    /// Where records end once `bytes` are written at `offset`, the last boundary before them
    /// being `boundary`: the new last boundary, and the splits of records longer than
    /// `maxRecord` (cut into pieces of that size; a partial record that reaches it is cut too).
    /// Only when the bytes could hold a record that long are they scanned line by line; else
    /// the last `\n` is all there is to find.
    static func boundaries(in bytes: UnsafeRawBufferPointer, at offset: Int, after boundary: Int, maxRecord: Int) -> (boundary: Int, splits: [Int]) {
        let end = offset + bytes.count
        guard end - boundary >= maxRecord else {
            return (lastNewline(in: bytes).map { offset + $0 + 1 } ?? boundary, [])
        }
        var boundary = boundary
        var splits: [Int] = []
        var index = 0
        while let newline = firstNewline(in: UnsafeRawBufferPointer(rebasing: bytes[index...])) {
            let recordEnd = offset + index + newline + 1
            while recordEnd - boundary > maxRecord {
                boundary += maxRecord
                splits.append(boundary)
            }
            boundary = recordEnd
            index += newline + 1
        }
        while end - boundary >= maxRecord {
            boundary += maxRecord
            splits.append(boundary)
        }
        return (boundary, splits)
    }

    /// The index of the last `\n` in `bytes`. Glibc's `memrchr` is not visible to Swift, so
    /// this compares eight bytes at a time (a word has a `\n` byte when the word XOR `\n`s has
    /// a zero byte), which keeps scanning binary input in lines mode at memory speed.
    package static func lastNewline(in bytes: UnsafeRawBufferPointer) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        var end = bytes.count
        let newlines: UInt64 = 0x0A0A_0A0A_0A0A_0A0A
        let low: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        while end >= 8 {
            let word = base.loadUnaligned(fromByteOffset: end - 8, as: UInt64.self) ^ newlines
            if (word &- low) & ~word & high != 0 { break }
            end -= 8
        }
        while end > 0 {
            end -= 1
            if base.load(fromByteOffset: end, as: UInt8.self) == 0x0A { return end }
        }
        return nil
    }

    /// How many `\n` bytes `bytes` holds, eight bytes at a time without a popcount (the
    /// baseline x86-64 has none): a byte of the word XOR `\n`s is zero exactly where a `\n` was,
    /// which the bit trick turns into a 1 in that byte; the bytes of `sums` add these up over at
    /// most 255 words, then their sum is taken. About 0.15 CPU-s per GB here (lines or not).
    static func newlineCount(in bytes: UnsafeRawBufferPointer) -> Int {
        guard let base = bytes.baseAddress else { return 0 }
        let newlines: UInt64 = 0x0A0A_0A0A_0A0A_0A0A
        let low7: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
        let lanes: UInt64 = 0x00FF_00FF_00FF_00FF
        var count = 0
        let words = bytes.count / 8
        var word = 0
        while word < words {
            var sums: UInt64 = 0
            let stop = min(words, word &+ 255)
            while word < stop {
                let x = base.loadUnaligned(fromByteOffset: word &* 8, as: UInt64.self) ^ newlines
                sums &+= ~((((x & low7) &+ low7) | x) | low7) >> 7
                word &+= 1
            }
            let pairs = (sums & lanes) &+ ((sums >> 8) & lanes)
            count &+= Int((pairs &* 0x0001_0001_0001_0001) >> 48)
        }
        var index = words &* 8
        while index < bytes.count {
            if base.load(fromByteOffset: index, as: UInt8.self) == 0x0A { count &+= 1 }
            index &+= 1
        }
        return count
    }

    package static func firstNewline(in bytes: UnsafeRawBufferPointer) -> Int? {
        guard let base = bytes.baseAddress, !bytes.isEmpty,
            let found = memchr(base, 0x0A, bytes.count)
        else { return nil }
        return UnsafeRawPointer(found) - base
    }
}
