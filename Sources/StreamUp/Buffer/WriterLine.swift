/// The writers of one buffer, in the order they came: whose turn it is to write, and who waits
/// for it. A pure state machine inside the buffer's `ReplayLog`, whose waiter table holds how
/// each writer in line is woken (`Waiter` is its waiter id there); the buffer's shell wakes the
/// writers it returns after unlocking.
///
/// A writer takes the turn, writes all of its bytes (waiting for space while it holds the turn
/// when they do not fit at once), and gives the turn back; the next writer in line gets it once
/// the bytes it needs are free. So each write is whole in the stream and writes go out in the
/// order they came, however many tasks and threads share the writer.
///
/// A writer that ``Patience/waits`` stays in line until it gets the turn (or the buffer fails or
/// ends). A ``Patience/brief`` writer (one that must not wait for space, such as
/// ``StreamWriter/writeIfSpace(_:)``) stays only while everyone ahead of it is about to be done
/// (a holder copying bytes it has space for, other brief writers); as soon as someone ahead
/// waits for space, or the space it needs is gone when its turn comes, it gives up.
///
/// Thread safety: a value type; the buffer keeps it in its `ReplayLog`, under its one lock.
struct WriterLine<Waiter> {
    /// How long a writer stays in line.
    enum Patience: Equatable {
        /// Until it gets the turn.
        case waits
        /// Only while the writers ahead are about to be done.
        case brief
    }

    /// A writer in line.
    struct Entry {
        let id: Int
        /// The free bytes it needs before it writes.
        let needs: Int
        let patience: Patience
        let waiter: Waiter
    }

    /// What became of a writer that asked for the turn or waited in line.
    enum Outcome: Equatable {
        /// It holds the turn now.
        case granted
        /// It must wait in line (``enqueue(_:)``).
        case queued
        /// A brief writer gave up: the bytes it needs are not free, or someone ahead waits for them.
        case full
        /// A brief writer gave up: the writer ahead of it holds the turn for a while (it may
        /// wait for its input), though the bytes it needs are free.
        case busy
        /// The buffer failed or its input ended: nothing more is written.
        case closed
    }

    /// The writer whose turn it is.
    private(set) var holder: Int?
    /// Whether the holder will give the turn back without waiting (it only copies bytes it has
    /// space for): brief writers may wait for it.
    private var holderIsQuick = false
    /// The writers waiting, first come first; the holder, waiting for space, is first.
    private(set) var entries: [Entry] = []
    private var nextID = 0

    /// A new writer's name in this line.
    mutating func newID() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    /// Writer `id`, which needs `needs` free bytes, asks for the turn (`free` bytes are free now;
    /// `closed`: the buffer failed or ended). `quick`: once it has the turn it gives it back
    /// without waiting for anything. Returns `.queued` when it must wait in line (add it with
    /// ``enqueue(_:)``).
    mutating func arrive(_ id: Int, needs: Int, patience: Patience, quick: Bool, free: Int, closed: Bool) -> Outcome {
        if closed { return .closed }
        if holder == nil && entries.isEmpty {
            guard needs <= free else { return patience == .waits ? .queued : .full }
            holder = id
            holderIsQuick = quick
            return .granted
        }
        guard patience == .brief else { return .queued }
        return aheadIsQuick ? .queued : (needs <= free - pendingNeeds ? .busy : .full)
    }

    /// Puts `entry` at the end of the line (after ``arrive(_:needs:patience:quick:free:closed:)``
    /// said `.queued`).
    mutating func enqueue(_ entry: Entry) {
        entries.append(entry)
    }

    /// The holder `id` found no space for the rest of its write: it waits, first in line, until
    /// `needs` bytes are free, and keeps the turn. Brief writers behind it give up (in what
    /// ``settle(free:closed:)`` returns).
    mutating func waitForSpace(_ entry: Entry) {
        precondition(holder == entry.id, "only the writer whose turn it is waits for space")
        holderIsQuick = false
        entries.insert(entry, at: 0)
    }

    /// Writer `id` is done: the turn goes on (in what ``settle(free:closed:)`` returns).
    mutating func leave(_ id: Int) {
        guard holder == id else { return }
        holder = nil
        holderIsQuick = false
    }

    /// Takes writer `id` out of the line (its task was cancelled); returns its waiter, nil when it
    /// was not waiting (it has been woken already).
    mutating func remove(_ id: Int) -> Waiter? {
        guard let index = entries.firstIndex(where: { $0.id == id }) else { return nil }
        return entries.remove(at: index).waiter
    }

    /// Who can go on now that `free` bytes are free (`closed`: the buffer failed or ended), each
    /// with what became of it; they are out of the line. At most one is granted the turn.
    mutating func settle(free: Int, closed: Bool) -> [(waiter: Waiter, outcome: Outcome)] {
        if closed {
            defer { entries = [] }
            return entries.map { ($0.waiter, .closed) }
        }
        var woken: [(waiter: Waiter, outcome: Outcome)] = []
        while let first = entries.first, holder == nil || holder == first.id {
            if first.needs <= free {
                entries.removeFirst()
                if holder == nil { holderIsQuick = first.patience == .brief }
                holder = first.id
                woken.append((first.waiter, .granted))
                break
            }
            guard first.patience == .brief else { break }
            entries.removeFirst()
            woken.append((first.waiter, .full))
        }
        // Brief writers stay only behind writers that are about to be done.
        var quick = holder == nil || holderIsQuick
        var kept: [Entry] = []
        var pending = 0
        for entry in entries {
            if entry.patience == .brief && !quick {
                woken.append((entry.waiter, entry.needs <= free - pending ? .busy : .full))
                continue
            }
            if entry.patience == .waits { quick = false }
            pending += entry.needs
            kept.append(entry)
        }
        entries = kept
        return woken
    }

    /// Whether the holder and everyone in line are about to be done.
    private var aheadIsQuick: Bool {
        (holder == nil || holderIsQuick) && entries.allSatisfy { $0.patience == .brief }
    }

    /// The bytes the writers in line need.
    private var pendingNeeds: Int {
        entries.reduce(0) { $0 + $1.needs }
    }
}

extension WriterLine: Sendable where Waiter: Sendable {}
extension WriterLine.Entry: Sendable where Waiter: Sendable {}
extension WriterLine.Patience: Sendable where Waiter: Sendable {}
extension WriterLine.Outcome: Sendable where Waiter: Sendable {}
