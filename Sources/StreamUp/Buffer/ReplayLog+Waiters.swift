/// What a waiter of a ``ReplayLog`` is woken with.
///
/// Thread safety: a value type.
enum LogWakeup: Equatable, Sendable {
    /// What it waited for is there (or its deadline passed, or the log failed or ended): it
    /// looks again.
    case ready
    /// A writer in line: what became of it.
    case turn(WriterLine<Int>.Outcome)
    /// Its writer was cancelled: it is out of the line and holds no turn.
    case cancelled
}

extension ReplayLog {
    /// What a waiter waits for.
    ///
    /// Thread safety: a value type.
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

        /// The instant the wait ends by itself, if any.
        var deadline: UploadClock.Instant? {
            switch self {
            case .readable(_, _, let deadline): deadline
            case .storageRoom(_, let retryAt): retryAt
            case .turn, .acknowledged, .liveInput: nil
            }
        }
    }

    /// The one timer the owner keeps: it calls ``ReplayLog/deadlinePassed(generation:now:)`` at
    /// `deadline` (nil: no timer); a timer of an older generation is stale.
    ///
    /// Thread safety: a value type.
    struct Timer: Equatable, Sendable {
        var deadline: UploadClock.Instant?
        var generation: Int
    }

    /// The log's one table of waiters, in the order they came, each what it waits for and how
    /// it is woken, and the one timer for the earliest deadline among them. The log decides
    /// who is woken; the table keeps them and their names.
    ///
    /// Thread safety: a value type, kept in the log.
    struct Waiters {
        /// One entry of the table.
        struct Waiter {
            let id: Int
            let wait: Wait
            let wake: Wake
        }

        private(set) var entries: [Waiter] = []
        private var nextID = 0
        private(set) var timer = Timer(deadline: nil, generation: 0)

        var isEmpty: Bool { entries.isEmpty }

        /// A new waiter's name.
        mutating func newID() -> Int {
            defer { nextID += 1 }
            return nextID
        }

        mutating func add(_ waiter: Waiter) {
            entries.append(waiter)
        }

        /// Takes waiter `id` out of the table; nil when it is not there (it was woken already).
        mutating func remove(_ id: Int) -> Waiter? {
            guard let index = entries.firstIndex(where: { $0.id == id }) else { return nil }
            return entries.remove(at: index)
        }

        /// Keeps only `kept` (the entries, in their order, that still wait).
        mutating func keep(_ kept: [Waiter]) {
            if kept.count < entries.count { entries = kept }
        }

        /// The timer of `generation` went off: whether it is the one kept (then it is spent).
        mutating func timerFired(generation: Int) -> Bool {
            guard generation == timer.generation else { return false }
            timer.deadline = nil
            return true
        }

        /// Asks for a timer at the earliest deadline waited for, when that is not the one kept.
        mutating func updateTimer(_ actions: inout Actions) {
            var earliest: UploadClock.Instant?
            for waiter in entries {
                if let deadline = waiter.wait.deadline, earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
            }
            guard earliest != timer.deadline else { return }
            timer = Timer(deadline: earliest, generation: timer.generation + 1)
            actions.timer = timer
        }
    }
}

extension ReplayLog.Wait: Sendable where Wake: Sendable {}
extension ReplayLog.Waiters: Sendable where Wake: Sendable {}
extension ReplayLog.Waiters.Waiter: Sendable where Wake: Sendable {}
