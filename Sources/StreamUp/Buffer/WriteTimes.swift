/// When the bytes a ``ReplayBuffer`` holds were written, coarsely: enough to say how old the
/// oldest unacknowledged byte is (`--metrics`), in bounded memory.
///
/// A mark `(offset, time)` is noted by the first write at least ``granularity`` after the last
/// mark, so the bytes from one mark to the next were written within `granularity` after the
/// first one's time. The age of a held byte is read from the last mark at or below it: never
/// younger than the truth, older by less than `granularity`. At ``limit`` marks every other
/// one is dropped (an age may then be older by more), and acknowledged marks are forgotten.
///
/// Thread safety: a value type, kept in the buffer's `ReplayLog` under the buffer's lock.
struct WriteTimes {
    typealias Instant = ContinuousClock.Instant

    static let granularity: Duration = .milliseconds(100)
    static let limit = 1_024

    private(set) var marks: [(offset: Int, time: Instant)] = []

    /// Notes that bytes from `offset` on were written at `time`.
    mutating func wrote(at offset: Int, time: Instant) {
        if let last = marks.last, time - last.time < Self.granularity { return }
        if marks.count >= Self.limit {
            // Keep the first (it dates the oldest held byte) and every other one after it.
            marks = marks.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
        }
        marks.append((offset, time))
    }

    /// Forgets marks no held byte needs: all but the last one at or below `offset`.
    mutating func acknowledge(upTo offset: Int) {
        guard let keep = marks.lastIndex(where: { $0.offset <= offset }), keep > 0 else { return }
        marks.removeFirst(keep)
    }

    /// When the byte at `offset` was written, at the earliest (nil: before any mark).
    func time(of offset: Int) -> Instant? {
        marks.last { $0.offset <= offset }?.time
    }
}
