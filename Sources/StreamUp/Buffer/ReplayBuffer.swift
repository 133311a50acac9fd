import Foundation

/// The one buffer of an upload: producers write into it, and either segment requests read
/// windows of it and bytes stay until the server acknowledges them (acknowledged segments), or
/// one live request reads it as a stream and each byte is released as the connection takes it
/// (``readLive(into:blocking:)``, one chunked request).
///
/// Three parts, as swift-async-algorithms splits its buffer: this face, which moves the bytes
/// (copies them in and out, finds record ends, calls the storage) outside any lock; the shell
/// (``ReplayLogShell``), which owns the one lock and the waiters and carries out what the
/// machine asks after unlocking; and the machine (``ReplayLog``), a pure state machine that
/// holds every cursor, where the input stands, the writers' line and the table of waiters. The
/// bytes live in a ``ReplayStorage``: a ``MemoryReplayStorage`` ring or a spool on disk. The
/// cursors keep the bytes each side touches apart, so no byte is copied under the lock.
///
/// - Writing (`ReplayBuffer+Writing.swift`): any number of writers (tasks and threads, through
///   one ``StreamWriter``) take turns in one line (`WriterLine`): the writer whose turn it is
///   fills free space in place; with a full buffer it waits, keeping its turn, until an
///   acknowledgement (or a live read) frees the bytes it needs. Every write that copies bytes
///   goes through one loop, ``write(_:from:mark:writer:waiting:)``, whose only difference
///   between writers is how they wait (``SpaceWait``). The writer finds the record ends in the
///   bytes it just filled, before publishing them (``RecordMode``); a record that grows past
///   `maxRecord` is split there, and counted.
/// - A full disk: when the storage has no room for a write (ENOSPC, EDQUOT: a spool's
///   ``ReplayStorage/retryTime(after:)``), the writer keeps its turn and the bytes (the log's
///   ``ReplayLog/Write/held(_:)``) and waits in the table until the retry instant on `clock` or
///   an acknowledgement, then commits them again; no more input is read meanwhile.
/// - Cutting (`ReplayBuffer+Reading.swift`): the delivery task cuts segments of whole
///   records, as far as its ``SegmentPlan`` allows (``cutSegment(from:limits:)``), from the
///   acknowledged offset or from the end of a segment still in flight (several disjoint ranges
///   above the acknowledged offset may be in flight at once), suspending (never blocking a
///   thread) until there is a record past its offset, the input ends, the buffer fails, or the
///   plan's deadline; then reads the cut bytes through ``WindowSource``, which never waits.
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
/// Thread safety: every field is a constant; the state that changes is the shell's, guarded by
/// its one lock. Callable from any task or thread.
package final class ReplayBuffer: Sendable {
    typealias Log = ReplayLog<ReplayLogShell.Wake>

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
    /// The lock, the machine and the waiters.
    let shell: ReplayLogShell

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
        let log = Log(
            capacity: storage.capacity, records: records, acknowledged: acknowledged, written: written, tracksSources: tracksSources,
            index: SourceIndex(keepsEntries: keepsSourceEntries), heldSince: .now)
        self.shell = ReplayLogShell(log: log, storage: storage, clock: clock)
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

    /// Reads the log under the lock.
    func withState<T: Sendable>(_ body: (Log) -> T) -> T {
        shell.read(body)
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
    var writableCount: Int { withState { $0.isClosed ? 0 : $0.free } }
    var failure: StreamUpError? { withState { $0.failure } }
    var bytesWritten: Int { withState { $0.written } - producerStart }
    /// Whether the writing side was ended: by the input's end, or a stop (also while the stop's
    /// losses are being said).
    var isFinishedWriting: Bool { withState { $0.isFinished } }
    /// Whether the input ended and every byte of it was acknowledged.
    var isDelivered: Bool { withState { $0.inputEnded && $0.acknowledged == $0.written } }
    /// Whether the input itself ended (not a stop) at the written offset.
    var inputReachedEnd: Bool { withState { $0.inputReachedEnd } }

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

    /// Where the bytes in `range` came from (entries are kept only in memory, with sources
    /// tracked; empty otherwise), in stream order.
    func sourceEntries(overlapping range: Range<Int>) -> [SourceIndex.Entry] {
        withState { $0.index.entries(overlapping: range) }
    }

    /// Where each source stands at the written end (what a spool holds), if sources are tracked.
    var latestSourcePositions: (offset: Int, positions: [SourceID: Int64]) {
        withState { ($0.written, $0.index.latest) }
    }

    // MARK: Ending

    /// The error a write meets once the input has ended.
    static let ended = StreamUpError(.bodyStreamClosed, "the body has ended: nothing more is written")

    /// The input has ended: the last partial record becomes a record, readers get the end.
    /// `stopped`: the writing was stopped before the input's end (a signal), which the storage
    /// is not told: what it holds may end in the middle of a record.
    ///
    /// A stop in lines mode does not make the unfinished last record a record: its bytes are
    /// dropped (the rest of it is never read), and ``onDroppedAtStop`` hears how many. Not when
    /// positions are saved (`tracksSources`): those bytes are where the saved position stands.
    /// Bytes waiting for room on the storage are dropped too (``onHeldDropped`` hears). What a
    /// stop drops is said before readers see the end: a run that ends at once must not end first.
    func finishWriting(stopped: Bool = false) {
        shell.act { $0.finish(stopped: stopped) }
    }

    /// Fails the buffer (the first failure wins): writes, reads and waits end with it.
    func failWriting(_ error: StreamUpError) {
        shell.act { $0.fail(error) }
    }

    /// Who hears how many bytes of an unfinished record a stop dropped.
    var onDroppedAtStop: (@Sendable (Int) -> Void)? {
        get { shell.onDroppedAtStop }
        set { shell.onDroppedAtStop = newValue }
    }

    /// Who hears how many bytes read from the input were dropped while they waited for room on
    /// the storage (a stop or a failure came first).
    var onHeldDropped: (@Sendable (Int) -> Void)? {
        get { shell.onHeldDropped }
        set { shell.onHeldDropped = newValue }
    }

    // MARK: Acknowledging

    /// Frees the bytes below `offset` (the server holds them) and returns the source positions
    /// they stand for (empty unless the buffer tracks sources). The storage is told first,
    /// outside the lock (it may release their room: a memory ring drops their pages, a spool
    /// deletes files up to `releasable` once a saved state caught up), and only then is the
    /// room handed to the writer, so nothing is released under a write.
    ///
    /// `wakingLater`: the waiters the room frees (a writer waiting for room) are woken by
    /// ``wakeHeld()``, or as soon as a task waits on the buffer, not now. The delivery task
    /// holds them from an answer until the next segment's request has started: a producer
    /// faster than the network waits on a full buffer, and woken at the answer it refills half
    /// the ring at once, on the cores the request's turnaround needs (measured: the answer to
    /// the next request's head took about twice as long, and segments lost a tenth of their
    /// throughput on two cores; Benchmarks/RESULTS.md).
    @discardableResult
    func acknowledge(upTo offset: Int, releasingBelow releasable: Int? = nil, wakingLater: Bool = false) -> [SourceID: Int64] {
        let (target, written) = withState { $0.acknowledgement(upTo: offset) }
        tellStorage(acknowledged: target, releasable: min(target, releasable ?? target), written: written)
        let (positions, actions) = shell.locked { $0.acknowledge(upTo: target) }
        shell.perform(actions, holdingWakes: wakingLater)
        return positions
    }

    /// Wakes the waiters an acknowledgement held back (``acknowledge(upTo:releasingBelow:wakingLater:)``).
    func wakeHeld() {
        shell.wakeHeld()
    }

    /// How many waiters an acknowledgement holds back now.
    var wakesHeld: Int { shell.wakesHeld }

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
}
