import StreamUpSystem

/// The shell of a ``ReplayBuffer`` around its pure state machine, ``ReplayLog`` (what
/// swift-async-algorithms calls the storage beside the state machine; here "storage" is where
/// the bytes are, ``ReplayStorage``). It owns the buffer's one lock, and under it the log, the
/// deadline timer and the two callbacks; and it owns how each waiter is woken: a task's
/// continuation or a parked thread, entries of the log's one waiter table.
///
/// It runs each event of the log under the lock and carries out the actions after releasing
/// it (``perform(_:)``): the storage is told first (a stop's drop, the input's end), the
/// callbacks hear, a stop then ends for readers, the timer is kept, and the waiters are woken.
/// It never calls out while holding the lock: no continuation is resumed, no thread woken, no
/// callback run and no storage called under it.
///
/// The wakes of an acknowledgement may be held back (``perform(_:holdingWakes:)``) until
/// ``wakeHeld()``, or until a task waits on the log (which wakes them first, so a task never
/// waits on a writer it holds back).
///
/// Thread safety: every mutable field is in `state`, guarded by its `Mutex`; callable from any
/// task or thread.
final class ReplayLogShell: Sendable {
    typealias Log = ReplayLog<Wake>

    /// How a waiter of the log is woken: a task's continuation, or a parked thread.
    ///
    /// Thread safety: a value type; each is resumed once, after the lock is released.
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

    /// What the lock guards.
    ///
    /// Thread safety: a value type, inside `state`.
    struct State {
        var log: Log
        /// The deadline timer: the generation it was made for and its task.
        var timer: (generation: Int, task: Task<Void, Never>?) = (0, nil)
        /// Who hears how many bytes of an unfinished record a stop dropped.
        var droppedAtStop: (@Sendable (Int) -> Void)?
        /// Who hears how many bytes waiting for room on the storage were dropped.
        var heldDropped: (@Sendable (Int) -> Void)?
        /// Wakes held back by ``perform(_:holdingWakes:)``, out of the log's table already.
        var heldWakes: [(wake: Wake, wakeup: LogWakeup)] = []
    }

    private let state: Mutex<State>
    /// Told of a stop's drop and of the input's end (after unlocking).
    let storage: any ReplayStorage
    /// What deadlines are measured on.
    let clock: UploadClock

    init(log: Log, storage: any ReplayStorage, clock: UploadClock) {
        state = Mutex(State(log: log))
        self.storage = storage
        self.clock = clock
    }

    deinit {
        state.withLock { $0.timer.task }?.cancel()
    }

    // MARK: Events

    /// Reads the log under the lock.
    func read<T: Sendable>(_ body: (Log) -> T) -> T {
        state.withLock { body($0.log) }
    }

    /// Runs an event of the log under the lock and returns what it returned (the caller carries
    /// out any actions in it).
    func locked<T: Sendable>(_ event: (inout Log) -> T) -> T {
        state.withLock { event(&$0.log) }
    }

    /// Runs an event of the log under the lock, then carries out its actions after unlocking.
    func act(_ event: (inout Log) -> Log.Actions) {
        perform(locked(event))
    }

    /// Carries out what the log asked for (never under the lock): the storage and the callbacks
    /// first, then the end of a stop whose losses they said, then the timer, then the waiters.
    func perform(_ actions: Log.Actions) {
        perform(actions, holdingWakes: false)
    }

    /// As ``perform(_:)``; when `holdingWakes`, the waiters it would wake are kept for
    /// ``wakeHeld()`` instead (they are out of the table: only that wakes them).
    func perform(_ actions: Log.Actions, holdingWakes: Bool) {
        if let dropped = actions.dropped {
            storage.discard(from: dropped.lowerBound)
            onDroppedAtStop?(dropped.count)
        }
        if let count = actions.heldDropped { onHeldDropped?(count) }
        if let end = actions.inputEndedAt { storage.inputEnded(at: end) }
        if actions.endsStop { act { $0.stopReported() } }
        if let timer = actions.timer { keep(timer) }
        if holdingWakes, !actions.wake.isEmpty {
            state.withLock { $0.heldWakes += actions.wake }
            return
        }
        for (wake, wakeup) in actions.wake { wake.resume(wakeup) }
    }

    /// How many waiters ``perform(_:holdingWakes:)`` holds back now.
    var wakesHeld: Int { state.withLock { $0.heldWakes.count } }

    /// Wakes the waiters ``perform(_:holdingWakes:)`` held back, if any.
    func wakeHeld() {
        let held = state.withLock { state in
            defer { state.heldWakes = [] }
            return state.heldWakes
        }
        for (wake, wakeup) in held { wake.resume(wakeup) }
    }

    /// Who hears how many bytes of an unfinished record a stop dropped.
    var onDroppedAtStop: (@Sendable (Int) -> Void)? {
        get { state.withLock { $0.droppedAtStop } }
        set { state.withLock { $0.droppedAtStop = newValue } }
    }

    /// Who hears how many bytes read from the input were dropped while they waited for room on
    /// the storage.
    var onHeldDropped: (@Sendable (Int) -> Void)? {
        get { state.withLock { $0.heldDropped } }
        set { state.withLock { $0.heldDropped = newValue } }
    }

    // MARK: Waiting

    /// Suspends the task as a waiter for `wait` (`now`: for its deadline) until the log wakes
    /// it or the task is cancelled.
    func wait(for wait: Log.Wait, now: UploadClock.Instant?) async {
        // What it waits for may need a writer held back.
        wakeHeld()
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

    /// Parks the calling thread as a waiter for `wait` (`now`: for its deadline) until the log
    /// wakes it (at once when what it waits for is there).
    func park(for wait: Log.Wait, now: UploadClock.Instant?) {
        let thread = ParkedThread()
        act { $0.wait($0.newWaiterID(), for: wait, wake: .thread(thread), now: now) }
        _ = thread.wait()
    }

    /// Suspends the task of writer `id` in line (first, when `holding` the turn) until `needs`
    /// bytes are free and the line wakes it, or the task is cancelled.
    func waitInLine(_ id: Int, needs: Int, holding: Bool) async -> LogWakeup {
        await withTaskCancellationHandler {
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
    }

    /// Puts the thread writer `id` in line and parks the calling thread until the line wakes it.
    func parkInLine(_ id: Int, needs: Int, patience: WriterLine<Int>.Patience, holding: Bool) -> LogWakeup {
        let thread = ParkedThread()
        act { $0.enterLine(id, needs: needs, patience: patience, holding: holding, wake: .thread(thread)) }
        return thread.wait()
    }

    // MARK: The deadline timer

    /// Keeps the timer the log asked for: a task that sleeps until its deadline on `clock`,
    /// replacing (and cancelling) the one of an older generation.
    private func keep(_ wanted: Log.Timer) {
        let task = wanted.deadline.map { deadline in
            Task { [weak self, clock] in
                do { try await clock.sleep(until: deadline) } catch { return }
                self?.deadlinePassed(generation: wanted.generation)
            }
        }
        let stale = state.withLock { state -> Task<Void, Never>? in
            // Two changes may arrive here out of order: the newer generation stays.
            guard wanted.generation > state.timer.generation else { return task }
            defer { state.timer = (wanted.generation, task) }
            return state.timer.task
        }
        stale?.cancel()
    }

    private func deadlinePassed(generation: Int) {
        let now = clock.now
        act { $0.deadlinePassed(generation: generation, now: now) }
    }
}
