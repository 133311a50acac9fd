import StreamUp

/// Decides which followed file reads next, and which files may stay open. Pure: no I/O, no
/// clock (a counter orders the writes).
///
/// - Turns: files with something to read wait in one round-robin queue. A turn reads at most
///   one chunk of one file (`LineReader`); a file that has more goes to the back. So while
///   any file keeps writing, every other file with lines waiting gets its turn within one
///   round: a busy file cannot starve a quiet one.
/// - Open files: at most `maxOpen`. A file that needs a descriptor gets a free one, or the one
///   of the least recently written open file that has nothing to read (and may be closed: the
///   caller says which may not, e.g. a rotated file being drained, which could not be found
///   again by name). Otherwise it waits until a turn ends and a descriptor can be freed.
///
///     queue (head → tail):  [b] [c] [a]     a: busy, requeued after its turn
///     open (by last write): c(7) a(9) b(12) d(3) → d is the one to close for a new file
///
/// Thread safety: a value type, confined to the following thread.
struct TailScheduler<Key: Hashable> {
    /// The most files open at once.
    let maxOpen: Int
    private var queue: [Key] = []
    private var head = 0
    private var queued: Set<Key> = []
    /// Open files and when each was last written (a counter, larger = more recent).
    private var open: [Key: UInt64] = [:]
    private var clock: UInt64 = 0

    init(maxOpen: Int) {
        precondition(maxOpen > 0, "at least one file must be allowed open")
        self.maxOpen = maxOpen
    }

    // MARK: Turns

    /// Whether some file waits for a turn.
    var hasReady: Bool { head < queue.count }

    /// How many files wait for a turn (a round is that many turns).
    var readyCount: Int { queue.count - head }

    /// Puts `key` at the back of the queue, unless it is queued already.
    mutating func markReady(_ key: Key) {
        guard queued.insert(key).inserted else { return }
        queue.append(key)
    }

    /// Whether `key` waits for a turn.
    func isReady(_ key: Key) -> Bool { queued.contains(key) }

    /// The file whose turn it is, taken off the queue (``markReady(_:)`` puts it back at the
    /// end when it has more).
    mutating func nextTurn() -> Key? {
        guard head < queue.count else { return nil }
        let key = queue[head]
        head += 1
        queued.remove(key)
        if head > 64 && head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        }
        return key
    }

    /// Forgets `key` (a file dropped): no turn, no descriptor.
    mutating func remove(_ key: Key) {
        if queued.remove(key) != nil {
            queue.removeAll { $0 == key }
            head = min(head, queue.count)
        }
        open[key] = nil
    }

    // MARK: Open files

    /// What a file that needs a descriptor may do.
    ///
    /// Thread safety: a value type.
    enum SlotDecision: Equatable {
        /// Open it: a descriptor is free (it is now counted as open).
        case open
        /// Close `victim` first (it is no longer counted), then open it.
        case openAfterClosing(Key)
        /// Every descriptor is in use by a file that has something to read or may not be
        /// closed: try again after the next turn.
        case wait
    }

    /// How many files are open.
    var openCount: Int { open.count }

    /// Whether `key` is counted as open.
    func isOpen(_ key: Key) -> Bool { open[key] != nil }

    /// Asks for a descriptor for `key` (not open yet); `mayClose` says which open files may be
    /// closed to make room (besides having nothing to read).
    mutating func requestSlot(for key: Key, mayClose: (Key) -> Bool) -> SlotDecision {
        if open[key] != nil { return .open }
        if open.count < maxOpen {
            open[key] = tick()
            return .open
        }
        var victim: (key: Key, written: UInt64)?
        for (candidate, written) in open where !queued.contains(candidate) && mayClose(candidate) {
            if let oldest = victim, oldest.written <= written { continue }
            victim = (candidate, written)
        }
        guard let victim else { return .wait }
        open[victim.key] = nil
        open[key] = tick()
        return .openAfterClosing(victim.key)
    }

    /// Counts `key` as open without asking (a file that must stay open: being drained).
    mutating func forceOpen(_ key: Key) {
        if open[key] == nil { open[key] = tick() }
    }

    /// `key` was closed.
    mutating func closed(_ key: Key) {
        open[key] = nil
    }

    /// `key` was just written to (it becomes the most recently written).
    mutating func wrote(_ key: Key) {
        if open[key] != nil { open[key] = tick() }
    }

    private mutating func tick() -> UInt64 {
        clock += 1
        return clock
    }
}
