import Foundation
import StreamUpHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one buffer of an upload: producers write into it, and either segment requests read
/// windows of it and bytes stay until the server acknowledges them (acknowledged segments), or
/// one live request reads it as a stream and each byte is released as the connection takes it
/// (``readLive(into:blocking:)``, one chunked request).
///
/// The buffer is a thin shell around a pure state machine, ``ReplayLog``, which holds every
/// cursor, the writers' line and the one table of waiters, and answers each event with the
/// actions to take. The shell owns one lock (`lock`, guarding `log`, `timer`, `held` and
/// the callbacks), asks the log under it, and carries out the actions after leaving it:
/// it resumes task continuations, wakes parked threads, tells the storage, arms the timer.
/// It does no I/O under the lock: bytes are copied in and out, record ends found and storage
/// calls made outside it, over ranges the cursors keep apart.
///
/// - Writing: any number of writers (tasks and threads, through one ``StreamWriter``) take
///   turns in one line (`WriterLine`): the writer whose turn it is fills free space in place;
///   with a full buffer it waits, keeping its turn, until an acknowledgement (or a live read)
///   frees the bytes it needs. The writer finds the record ends in the bytes it just filled,
///   before publishing them (``RecordMode``); a record that grows past `maxRecord` is split
///   there, and counted.
/// - A full disk: when the storage has no room for a write (ENOSPC, EDQUOT: a spool's
///   ``ReplayStorage/retryTime(after:)``), the writer keeps its turn and the bytes (``Held``)
///   and waits in the table until the retry instant on `clock` or an acknowledgement, then
///   commits them again; no more input is read meanwhile.
/// - Cutting: the delivery task cuts segments of whole records, as far as its ``SegmentPlan``
///   allows (``cutSegment(from:limits:)``), from the acknowledged offset or from the end of a
///   segment still in flight (several disjoint ranges above the acknowledged offset may be in
///   flight at once), suspending (never blocking a thread) until there is a record past its
///   offset, the input ends, the buffer fails, or the plan's deadline; then reads the cut
///   bytes through ``WindowSource``, which never waits. The search for record ends reads the
///   storage outside the lock: the bytes between the cut's start and the boundary are not
///   touched by the writer while they are held.
/// - Deadlines: a readable wait may carry a deadline on `clock`; the shell keeps one timer
///   task, for the earliest deadline waited for (``ReplayLog/Timer``), so a manual clock
///   drives them in tests.
/// - Acknowledging: tells the storage first (outside the lock; a storage orders its own
///   acknowledgements), then frees the bytes below an offset, wakes whoever that concerns,
///   and returns the source positions the freed bytes stand for (``SourceIndex``).
/// - Reading live (one request): the request's reader (URLSession's thread) parks until there
///   is a byte, the end or a failure, takes the bytes from the acknowledged offset and
///   acknowledges them at once: nothing can be sent again.
///
/// Thread safety: `@unchecked Sendable` because `log`, `timer`, `held` and the two callbacks
/// are guarded by `lock`, which is never held while a continuation is resumed, a thread is
/// woken, a callback runs or the storage is called.
package final class ReplayBuffer: @unchecked Sendable {
    typealias Log = ReplayLog<Wake>

    /// How a waiter of the log is woken: a task's continuation, or a parked thread.
    enum Wake: Sendable {
        case task(CheckedContinuation<LogWakeup, Never>)
        case thread(ParkedThread)

        func resume(_ wakeup: LogWakeup) {
            switch self {
            case .task(let continuation): continuation.resume(returning: wakeup)
            case .thread(let thread): thread.wake(wakeup)
            }
        }
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
    private let lock = NSLock()
    /// The state machine; guarded by `lock`.
    private var log: Log
    /// The deadline timer: the generation it was made for and its task; guarded by `lock`.
    private var timer: (generation: Int, task: Task<Void, Never>?) = (0, nil)
    /// Guarded by `lock`, see ``onDroppedAtStop``.
    private var droppedAtStop: (@Sendable (Int) -> Void)?
    /// Guarded by `lock`, see ``onHeldDropped``.
    private var heldDropped: (@Sendable (Int) -> Void)?
    /// The bytes of the turn's holder that the storage had no room for (``Held``); guarded by
    /// `lock`, set and taken by the holder (a stop only marks them reported).
    private var held: Held?

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
        self.storage = storage
        self.records = records
        self.maxRecord = maxRecord
        self.producerStart = written
        self.tracksSources = tracksSources
        self.spaceWatermark = max(1, min(spaceWatermark, storage.capacity))
        self.clock = clock
        // What an earlier run left is whole records (its requests ended on boundaries), and at
        // least as old as this run.
        self.log = Log(
            capacity: storage.capacity, records: records, acknowledged: acknowledged, written: written, tracksSources: tracksSources,
            index: SourceIndex(keepsEntries: keepsSourceEntries), heldSince: .now)
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

    deinit { timer.task?.cancel() }

    var capacity: Int { storage.capacity }

    /// Reads the log under the lock.
    func withState<T>(_ body: (Log) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(log)
    }

    /// Runs an event of the log under the lock.
    private func locked<T, Failure: Error>(_ event: (inout Log) throws(Failure) -> T) throws(Failure) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try event(&log)
    }

    /// Runs an event of the log under the lock, then carries out its actions after unlocking.
    private func act(_ event: (inout Log) -> Log.Actions) {
        perform(locked(event))
    }

    /// Carries out what the log asked for (never under the lock): the storage first, then the
    /// timer, then the waiters.
    private func perform(_ actions: Log.Actions) {
        if let dropped = actions.dropped, !dropped.isEmpty { discard(dropped) }
        if let end = actions.inputEndedAt { storage.inputEnded(at: end) }
        if let timer = actions.timer { keep(timer) }
        for (wake, wakeup) in actions.wake { wake.resume(wakeup) }
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
        withState { log in
            guard log.written > log.acknowledged, let time = log.writeTimes.time(of: log.acknowledged) else { return .zero }
            return max(.zero, now - time)
        }
    }
    /// How often the producer found the buffer full, and for how long it waited in all.
    var pauses: (count: Int, time: Duration) {
        let now = ContinuousClock.now
        return withState { log in
            let ongoing = log.pausedSince.map { now - $0 } ?? .zero
            return (log.pauses, log.pausedTime + ongoing)
        }
    }

    // MARK: Writing (the producer's side)

    /// Offers free space (one contiguous piece of at most `maxLength` bytes) to `fill`, which
    /// returns how many bytes it put there; those bytes came from `mark` (nil: no source to
    /// remember). Returns what `fill` returned, or nil without calling it when there is no space.
    /// Only the writer whose turn it is calls it; it never waits, apart from what `fill` does.
    ///
    /// When the storage has no room for the bytes (a full disk, ``ReplayStorage/retryTime(after:)``)
    /// they are held, in the storage's writable space, and nil is returned: the writer waits
    /// (``waitForSpace(_:needs:)``, which waits for room on the storage then) and calls again,
    /// which commits the held bytes first and returns their count, without calling `fill`.
    /// A writer that leaves its turn with bytes held drops them (``onHeldDropped`` hears).
    /// - Throws: the buffer's failure (or its end) instead of calling `fill`; what `fill` threw.
    func withWritableSpace(maxLength: Int, mark: SourceMark?, _ fill: (UnsafeMutableRawBufferPointer) throws -> Int) throws -> Int? {
        let started = ContinuousClock.now
        let offset: Int
        let free: Int
        let boundary: Int
        let waiting: Held?
        do {
            // One lock per write: the reservation, and any bytes held for room on the storage.
            (offset, free, boundary, waiting) = try locked { log throws(StreamUpError) in
                let reserved = try log.reserve(now: started)
                return (reserved.offset, reserved.free, reserved.boundary, held)
            }
        } catch {
            // A stop or a failure while bytes waited for room: they are not kept.
            dropHeld()
            throw error
        }
        if let waiting { return try commit(waiting) }
        if free == 0 { return nil }
        // The last lock of a counted write settles what a stop owes; only an early end (nothing
        // read, a read after a stop) takes the lock again for it.
        var settled = false
        defer {
            if !settled { act { $0.endedEarly() } }
        }
        let space = storage.writableSpace(at: offset, maxLength: min(maxLength, free))
        let count = try fill(space)
        precondition(count >= 0 && count <= space.count, "filled \(count) of \(space.count) bytes")
        guard count > 0 else { return 0 }
        // A read that returned after a stop dropped the unfinished record: its bytes would
        // continue a record no longer there.
        guard locked({ $0.beginCommit() }) else {
            onDroppedAtStop?(count)
            throw Self.ended
        }
        // The record ends are found in the bytes just filled, before they are published.
        let filled = UnsafeRawBufferPointer(rebasing: space[..<count])
        let found =
            records == .lines
            ? Self.boundaries(in: filled, at: offset, after: boundary, maxRecord: maxRecord)
            : (boundary: offset + count, splits: [])
        let lines = records == .lines ? Self.newlineCount(in: filled) : 0
        // From here the commit settles the write: it counts the bytes, holds them, or ends it.
        settled = true
        return try commit(
            Held(space: space, count: count, offset: offset, mark: mark, boundary: found.boundary, splits: found.splits, lines: lines, time: .now))
    }

    /// Copies the next piece of a write into the free space: the bytes of `bytes` from `offset`
    /// on, as many as one contiguous piece takes (a write may take two at the buffer's wrap),
    /// marked as the part of `mark` (the whole write's source, or nil) they stand for. Returns
    /// how many went in; nil when none did: the buffer is full, or the storage had no room for
    /// them (a full disk: they are held, and the call after the writer's wait commits them).
    ///
    /// Every write that copies bytes goes through it, each with its own way of waiting before it
    /// calls again with the same offset (a task suspends, a thread parks). Only the writer whose
    /// turn it is calls it, from its own task or thread; `lock` is taken and released inside
    /// ``withWritableSpace(maxLength:mark:_:)``, and the bytes are copied while it is not held.
    func copyPiece(of bytes: UnsafeRawBufferPointer, from offset: Int, mark: SourceMark?) throws -> Int? {
        let piece = mark.map { StreamWriter.mark($0, forBytes: offset, of: bytes.count) }
        return try withWritableSpace(maxLength: bytes.count - offset, mark: piece) { space in
            space.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + space.count]))
            return space.count
        }
    }

    /// Bytes filled and found, on their way into the storage; held while it has no room.
    struct Held {
        let space: UnsafeMutableRawBufferPointer
        let count: Int
        let offset: Int
        let mark: SourceMark?
        let boundary: Int
        let splits: [Int]
        let lines: Int
        /// When they were read (their write time).
        let time: ContinuousClock.Instant
        /// When the storage is tried again, and the acknowledged offset then (an
        /// acknowledgement past it may free room on the storage).
        var retryAt: UploadClock.Instant? = nil
        var acknowledged = 0
        /// Whether ``onHeldDropped`` heard about them already (a stop said so before its end).
        var reported = false
    }

    /// The count of held bytes not reported yet, now marked reported; nil when there are none.
    /// Called under `lock`.
    private func heldToReport() -> Int? {
        guard let waiting = held, !waiting.reported else { return nil }
        held?.reported = true
        return waiting.count
    }

    /// Commits `bytes` to the storage and counts them (returns their count); holds them and
    /// returns nil when the storage has no room now; fails the buffer on any other error.
    private func commit(_ bytes: Held) throws(StreamUpError) -> Int? {
        do throws(StreamUpError) {
            try storage.commit(bytes.space, count: bytes.count, at: bytes.offset, mark: bytes.mark)
        } catch {
            if let retryAt = storage.retryTime(after: error) {
                locked { log in
                    let reported = held?.reported ?? false
                    held = bytes
                    held?.reported = reported
                    held?.retryAt = retryAt
                    held?.acknowledged = log.acknowledged
                }
                return nil
            }
            locked { _ in held = nil }
            failWriting(error)
            act { $0.endedEarly() }
            throw error
        }
        let actions = locked { log in
            held = nil
            return log.committed(
                count: bytes.count, at: bytes.offset, boundary: bytes.boundary, splits: bytes.splits, lines: bytes.lines, now: bytes.time,
                mark: bytes.mark)
        }
        perform(actions)
        return bytes.count
    }

    /// The wait of the holder whose bytes the storage had no room for; nil when none are held.
    private var heldWait: Log.Wait? {
        locked { _ in
            held.flatMap { held in held.retryAt.map { .storageRoom(acknowledged: held.acknowledged, retryAt: $0) } }
        }
    }

    /// Drops the held bytes, if any (their writer leaves its turn: a stop, a failure, a cancel),
    /// ends their write and tells ``onHeldDropped``.
    private func dropHeld() {
        guard let dropped = locked({ _ in held.take() }) else { return }
        act { $0.endedEarly() }
        if !dropped.reported { onHeldDropped?(dropped.count) }
    }

    /// Takes back the held bytes without a word (their writer must not wait and still has them:
    /// it is told that the storage is full) and ends their write.
    func giveBackHeld() {
        guard locked({ _ in held.take() }) != nil else { return }
        act { $0.endedEarly() }
    }

    /// Who hears how many bytes read from the input were dropped while they waited for room on
    /// the storage (a stop or a failure came first).
    var onHeldDropped: (@Sendable (Int) -> Void)? {
        get { locked { _ in heldDropped } }
        set { locked { _ in heldDropped = newValue } }
    }

    /// Where the bytes in `range` came from (entries are kept only in memory, with sources
    /// tracked; empty otherwise), in stream order.
    func sourceEntries(overlapping range: Range<Int>) -> [SourceIndex.Entry] {
        withState { $0.index.entries(overlapping: range) }
    }

    func skip(_ mark: SourceMark) {
        guard tracksSources else { return }
        locked { $0.skip(mark) }
    }

    var writableCount: Int {
        withState { $0.isClosed ? 0 : $0.free }
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
        let dropping = locked { $0.stopDropping(stopped: stopped) }
        if let dropping, !dropping.isEmpty { discard(dropping) }
        // So are bytes waiting for room on the storage, which the holder drops once it wakes.
        if stopped, let waiting = locked({ _ in heldToReport() }) { onHeldDropped?(waiting) }
        act { $0.finish(stopped: stopped, dropping: dropping) }
    }

    /// Who hears how many bytes of an unfinished record a stop dropped.
    var onDroppedAtStop: (@Sendable (Int) -> Void)? {
        get { locked { _ in droppedAtStop } }
        set { locked { _ in droppedAtStop = newValue } }
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
        act { $0.fail(error) }
    }

    // MARK: Writers' turns

    /// The error a write meets once the input has ended.
    static let ended = StreamUpError(.bodyStreamClosed, "the body has ended: nothing more is written")

    /// A new writer's name in the line.
    func newWriterID() -> Int {
        locked { $0.newWriterID() }
    }

    /// Takes the turn for writer `id` once `needs` bytes are free, waiting in line behind the
    /// writers that came first; one that must wait for room waits for `refill` bytes (default
    /// `needs`), so that one wake-up refills a good part of the buffer. `quick`: it gives the
    /// turn back without waiting for anything.
    /// - Throws: the buffer's failure (or its end); `CancellationError` when the task is
    ///   cancelled while in line (it then holds no turn).
    func takeTurn(_ id: Int, needs: Int, refill: Int? = nil, quick: Bool) async throws {
        if try arrive(id, needs: needs, quick: quick) { return }
        try await waitInLine(id, needs: max(needs, refill ?? needs), holding: false)
    }

    /// The holder `id` waits, keeping its turn, until `needs` bytes are free; or, when the
    /// storage had no room for its bytes, until it is time to try them again.
    /// - Throws: the buffer's failure (or its end); `CancellationError` when cancelled.
    func waitForSpace(_ id: Int, needs: Int) async throws {
        if let wait = heldWait {
            await waitFor(wait, now: clock.now)
            try Task.checkCancellation()
            return
        }
        try await waitInLine(id, needs: needs, holding: true)
    }

    /// Suspends the calling task in line until the line wakes it.
    private func waitInLine(_ id: Int, needs: Int, holding: Bool) async throws {
        let wakeup = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<LogWakeup, Never>) in
                // Checked under the lock: a cancel handler that already ran found nothing to
                // take out of the line, so this writer must not enter it.
                act { log in
                    log.enterLine(id, needs: needs, patience: .waits, holding: holding, wake: .task(continuation), cancelled: Task.isCancelled)
                }
            }
        } onCancel: {
            act { $0.cancelWriter(id, forever: false) }
        }
        try check(wakeup)
    }

    /// Takes the turn for the thread writer `id` once `needs` bytes are free, parked in line.
    /// - Throws: the buffer's failure (or its end); `CancellationError` once the thread's
    ///   producer was cancelled (``cancelThreadWriter(_:)``).
    func takeTurnBlocking(_ id: Int, needs: Int, refill: Int? = nil, quick: Bool) throws {
        if try arrive(id, needs: needs, quick: quick) { return }
        try check(park(id, needs: max(needs, refill ?? needs), patience: .waits, holding: false))
    }

    /// The thread writer `id`, holding the turn, parks until `needs` bytes are free; or, when
    /// the storage had no room for its bytes, until it is time to try them again.
    func waitForSpaceBlocking(_ id: Int, needs: Int) throws {
        if let wait = heldWait {
            if locked({ $0.isCancelledWriter(id) }) { throw CancellationError() }
            let thread = ParkedThread()
            let now = clock.now
            act { $0.wait($0.newWaiterID(), for: wait, wake: .thread(thread), now: now) }
            _ = thread.wait()
            return
        }
        try check(park(id, needs: needs, patience: .waits, holding: true))
    }

    /// Takes the turn for a writer of `needs` bytes that must not wait for space: at once, or
    /// after the writers ahead that only copy (the calling thread parks that long, as on a
    /// lock). Returns `.granted`, `.full`, `.busy` or `.closed`; never `.queued`.
    func tryTakeTurn(_ id: Int, needs: Int) -> WriterLine<Int>.Outcome {
        let now = ContinuousClock.now
        let outcome = locked { $0.arrive(id, needs: needs, patience: .brief, quick: true, now: now) }
        guard outcome == .queued else { return outcome }
        if case .turn(let outcome) = park(id, needs: needs, patience: .brief, holding: false) { return outcome }
        return .closed
    }

    /// Puts the thread writer `id` in line and parks the calling thread until the line wakes it.
    private func park(_ id: Int, needs: Int, patience: WriterLine<Int>.Patience, holding: Bool) -> LogWakeup {
        let thread = ParkedThread()
        act { $0.enterLine(id, needs: needs, patience: patience, holding: holding, wake: .thread(thread)) }
        return thread.wait()
    }

    /// Ends the waits of the thread writer `id`, now and later, with `CancellationError`.
    func cancelThreadWriter(_ id: Int) {
        act { $0.cancelWriter(id, forever: true) }
    }

    /// Writer `id` gives the turn back; the next in line gets it when it can go on. Bytes it
    /// holds that the storage had no room for are dropped (it was stopped or cancelled).
    func leaveTurn(_ id: Int) {
        if locked({ $0.writers.holder == id && held != nil }) { dropHeld() }
        act { $0.leaveTurn(id) }
    }

    /// Writer `id` asks for the turn: whether it got it now (false: it must wait in line).
    private func arrive(_ id: Int, needs: Int, quick: Bool) throws -> Bool {
        let now = ContinuousClock.now
        let (outcome, failure) = locked { log in
            (log.arrive(id, needs: needs, patience: .waits, quick: quick, now: now), log.failure)
        }
        switch outcome {
        case .granted: return true
        case .queued: return false
        case .closed, .full, .busy: throw failure ?? Self.ended
        }
    }

    /// Goes on after a writer's wait: granted, or throws why not.
    private func check(_ wakeup: LogWakeup) throws {
        switch wakeup {
        case .turn(.granted), .ready: return
        case .cancelled: throw CancellationError()
        case .turn: throw failure ?? Self.ended
        }
    }

    // MARK: Reading live (one request's side)

    /// Copies bytes from the acknowledged offset into `destination` and acknowledges them: the
    /// connection has them, and nothing is sent again. A `blocking` read parks (this thread:
    /// URLSession's reader, DesignNotes, platform fact 3) until a byte, the end or a failure.
    /// - Returns: the bytes copied, `.end` once the input ended and all was read, or
    ///   `.wouldBlock` (only when not `blocking`) when nothing is there yet.
    /// - Throws: the buffer's failure (a cancel, the producer's failure, the request's end).
    func readLive(into destination: UnsafeMutableRawBufferPointer, blocking: Bool) throws(StreamUpError) -> BodyRead {
        while true {
            switch withState({ $0.liveRead() }) {
            case .failed(let failure):
                throw failure
            case .end:
                return .end
            case .nothing:
                guard blocking else { return .wouldBlock }
                // Woken at once when a byte came in between.
                let thread = ParkedThread()
                act { $0.wait($0.newWaiterID(), for: .liveInput, wake: .thread(thread)) }
                _ = thread.wait()
            case .bytes(let offset, let held):
                guard !destination.isEmpty else { return .wouldBlock }
                // Across the ring's end too: each read is a libcurl callback of fixed cost, so
                // a read cut short where the ring wraps would cost a whole extra one.
                let wanted = min(destination.count, held)
                var count = 0
                while count < wanted {
                    count += try storage.read(at: offset + count, into: UnsafeMutableRawBufferPointer(rebasing: destination[count..<wanted]))
                }
                acknowledge(upTo: offset + count)
                return .bytes(count)
            }
        }
    }

    // MARK: Waiting (the delivery task's side)

    /// Suspends until a segment cut at `offset` would find something new: a whole record past
    /// it, the end of the input, or a failure; or until `deadline` passes, or the task is
    /// cancelled. Only the task waits: no thread blocks. Any number of tasks may wait, each
    /// from its own offset (segments in flight at once).
    func waitUntilReadable(from offset: Int, until deadline: UploadClock.Instant? = nil) async {
        await waitUntilReadable(from: offset, segmentStart: offset, until: deadline)
    }

    /// ``waitUntilReadable(from:until:)`` for a segment that began at `start`: a full buffer
    /// wakes it too when the segment holds a record (it then ends, so that its acknowledgement
    /// frees room).
    private func waitUntilReadable(from offset: Int, segmentStart start: Int, until deadline: UploadClock.Instant?) async {
        await waitFor(.readable(from: offset, start: start, deadline: deadline), now: deadline == nil ? nil : clock.now)
    }

    /// Suspends until everything below `offset` is acknowledged, the buffer failed, or the task
    /// is cancelled.
    func waitUntilAcknowledged(_ offset: Int) async {
        await waitFor(.acknowledged(upTo: offset), now: nil)
    }

    /// Suspends the task as a waiter for `wait` (`now`: for its deadline) until the log wakes
    /// it or the task is cancelled.
    private func waitFor(_ wait: Log.Wait, now: UploadClock.Instant?) async {
        let id = locked { $0.newWaiterID() }
        // Checked under the lock: a cancel that came before the waiter entered is seen there.
        _ = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<LogWakeup, Never>) in
                act { $0.wait(id, for: wait, wake: .task(continuation), now: now, cancelled: Task.isCancelled) }
            }
        } onCancel: {
            act { $0.cancelWait(id) }
        }
    }

    /// Keeps the timer the log asked for: a task that sleeps until its deadline on `clock`,
    /// replacing (and cancelling) the one of an older generation.
    private func keep(_ wanted: Log.Timer) {
        let task = wanted.deadline.map { deadline in
            Task { [weak self, clock] in
                do { try await clock.sleep(until: deadline) } catch { return }
                self?.deadlinePassed(generation: wanted.generation)
            }
        }
        let stale = locked { _ -> Task<Void, Never>? in
            // Two changes may arrive here out of order: the newer generation stays.
            guard wanted.generation > timer.generation else { return task }
            defer { timer = (wanted.generation, task) }
            return timer.task
        }
        stale?.cancel()
    }

    private func deadlinePassed(generation: Int) {
        let now = clock.now
        act { $0.deadlinePassed(generation: generation, now: now) }
    }

    // MARK: Acknowledging

    /// Frees the bytes below `offset` (the server holds them) and returns the source positions
    /// they stand for (empty unless the buffer tracks sources). The storage is told first,
    /// outside the lock (it may release their room: a memory ring drops their pages, a spool
    /// deletes files up to `releasable` once a saved state caught up), and only then is the
    /// room handed to the writer, so nothing is released under a write.
    @discardableResult
    func acknowledge(upTo offset: Int, releasingBelow releasable: Int? = nil) -> [SourceID: Int64] {
        let (target, written) = withState { $0.acknowledgement(upTo: offset) }
        tellStorage(acknowledged: target, releasable: min(target, releasable ?? target), written: written)
        let (positions, actions) = locked { $0.acknowledge(upTo: target) }
        perform(actions)
        return positions
    }

    /// Lets the storage free what is below `offset` (at most the acknowledged offset); a spool
    /// deletes files once the saved positions cover them too.
    func releaseStorage(below offset: Int) {
        let (acknowledged, written) = withState { ($0.acknowledged, $0.written) }
        tellStorage(acknowledged: acknowledged, releasable: min(offset, acknowledged), written: written)
    }

    /// Storage calls happen outside the lock (a spool writes and deletes files, a memory ring
    /// calls `madvise`); the delivery task (or a live reader) and the checkpoint task make
    /// them, and the storage orders them itself (``ReplayStorage/acknowledge(upTo:releasingBelow:written:)``).
    private func tellStorage(acknowledged: Int, releasable: Int, written: Int) {
        do throws(StreamUpError) {
            try storage.acknowledge(upTo: acknowledged, releasingBelow: releasable, written: written)
        } catch {
            failWriting(error)
        }
    }

    /// Cuts the segment from `offset` (the acknowledged offset, or the end of a segment still
    /// in flight) that `limits` allow: whole records, up to the size limit, the time limit
    /// (from its first byte), the record limit, a full buffer, or the input's end
    /// (``SegmentPlan``). While the plan waits for records the task suspends
    /// (``waitUntilReadable(from:until:)``); the producer keeps writing meanwhile.
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
                await waitUntilReadable(from: plan.wakeOffset(at: position), segmentStart: offset, until: deadline)
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

    /// One step of `plan` for a cut at `position`. The cursors are read under the lock; the
    /// plan reads the storage for record ends outside it, over held bytes from the cut's start
    /// to the boundary, which the writer does not touch (the cut starts at or above the
    /// acknowledged offset, and only its own caller acknowledges what it cut). A cut that
    /// `seesFullBuffer` ends at a boundary when the buffer is full, so that the
    /// acknowledgement frees room.
    private func decide(_ plan: inout SegmentPlan<UploadClock.Instant>, at position: Int, seesFullBuffer: Bool)
        -> SegmentPlan<UploadClock.Instant>.Decision
    {
        let now = clock.now
        let (available, splits) = withState { log in
            (
                SegmentPlan<UploadClock.Instant>.Available(
                    boundary: log.boundary, inputEnded: log.inputEnded, bufferFull: seesFullBuffer && log.isFull),
                log.splits
            )
        }
        let boundaries = BufferBoundaries(storage: storage, records: records, splits: splits, end: available.boundary)
        return plan.decide(at: position, available, now: now, boundaries: boundaries)
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

/// A thread parked until a ``ReplayLog`` waiter's wake-up: a writer in line, a live reader.
/// The wake-up comes after the buffer's lock is released.
///
/// Thread safety: `wakeup` is guarded by `condition`; one thread waits, one wakes it, once.
final class ParkedThread: @unchecked Sendable {
    private let condition = NSCondition()
    private var wakeup: LogWakeup?

    func wake(_ wakeup: LogWakeup) {
        condition.lock()
        self.wakeup = wakeup
        condition.signal()
        condition.unlock()
    }

    /// Parks until ``wake(_:)``; returns what it said.
    func wait() -> LogWakeup {
        condition.lock()
        defer { condition.unlock() }
        while wakeup == nil { condition.wait() }
        return wakeup!
    }
}
