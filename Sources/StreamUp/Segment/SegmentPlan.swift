/// Decides how far one segment request may read: a pure state machine over offsets and
/// instants, with no I/O, so its rules are tested on a manual clock.
///
/// A segment starts at `start` (the acknowledged offset) and hands bytes out up to `committed`,
/// which is always a record boundary. When the reader reaches `committed`, the plan either
/// commits to the next boundary, ends the segment, or says to wait for more input. The rules:
/// - size: the segment ends at the last boundary at or before `start + maxBytes`; a first record
///   longer than that goes whole into a segment of its own (records never exceed the buffer's
///   `maxRecord`, which splits longer ones);
/// - time: `maxDuration` after its first byte, the segment ends at the next boundary;
/// - records: with `maxRecords`, the segment ends after that many records (Datadog takes at
///   most 1,000 entries a request);
/// - a full buffer (the producer is waiting for space) ends the segment at a boundary, so the
///   acknowledgement frees room instead of the request waiting for its deadline;
/// - the end of the input ends the segment once everything is handed out.
///
/// ```
///   start            committed        boundary      written
///     |== handed out ==|== may hand out ==|-- partial record --|
/// ```
///
/// Thread safety: a value type; its owner confines it (the task that cuts the segment).
struct SegmentPlan<Instant: InstantProtocol> where Instant.Duration == Duration {
    typealias Limits = SegmentLimits

    /// What the buffer holds right now, as the plan needs it.
    struct Available: Equatable {
        /// The last record boundary written (every record before it is complete).
        var boundary: Int
        /// Whether the input has ended (then `boundary` is the end of the input).
        var inputEnded: Bool
        /// Whether the buffer is full, so the producer waits for an acknowledgement.
        var bufferFull: Bool
    }

    /// What the reader should do next.
    enum Decision: Equatable {
        /// Hand out bytes from the reader's position up to this offset.
        case send(upTo: Int)
        /// The segment is over; `reachedInputEnd` when it carries the last byte of the input.
        case end(reachedInputEnd: Bool)
        /// Nothing to hand out yet: wait for input until this instant (nil: no deadline).
        case wait(until: Instant?)
    }

    let start: Int
    let limits: Limits
    /// Bytes before this offset may be handed out; always a record boundary.
    private(set) var committed: Int
    /// When the first byte was handed out; the time limit counts from it.
    private(set) var firstByteAt: Instant?
    /// Whether the records found whole at the deadline were committed (``decide(at:_:now:boundaries:)``).
    private var tookLateRecords = false
    /// Records committed (counted only when `limits.maxRecords` is set).
    private(set) var records = 0

    init(start: Int, limits: Limits) {
        precondition(limits.maxBytes > 0 && limits.maxDuration > .zero, "a segment needs room and time")
        self.start = start
        self.limits = limits
        self.committed = start
    }

    /// When the time limit ends the segment (nil until the first byte).
    var deadline: Instant? { firstByteAt?.advanced(by: limits.maxDuration) }

    /// Where the boundary must get past before a waiting reader at `position` has something to
    /// decide: once the segment has started only its deadline, its size limit, a full buffer or
    /// the input's end can end it, and records written meanwhile are all taken then, so the
    /// reader sleeps through them (one wake-up a segment, not one a write). Before the first
    /// byte (the clock starts with it), and with a record limit (records are counted as they
    /// come), any new record is worth a wake-up.
    func wakeOffset(at position: Int) -> Int {
        guard firstByteAt != nil, limits.maxRecords == nil else { return position }
        return max(position, start + limits.maxBytes - 1)
    }

    /// The next step for a reader at `position` (at most `committed`).
    mutating func decide(at position: Int, _ available: Available, now: Instant, boundaries: some RecordBoundaryFinder) -> Decision {
        precondition(start <= position && position <= committed, "the reader is outside the segment")
        if position < committed { return .send(upTo: committed) }
        if let deadline, now >= deadline {
            // Records whole by then that the reader slept through (``wakeOffset(at:)``) go in
            // this segment, once; then it ends.
            guard !tookLateRecords, available.boundary > committed else { return .end(reachedInputEnd: false) }
            tookLateRecords = true
        }
        if committed - start >= limits.maxBytes { return .end(reachedInputEnd: false) }
        if let maxRecords = limits.maxRecords, records >= maxRecords { return .end(reachedInputEnd: false) }
        if available.boundary > committed {
            let limit = start + limits.maxBytes
            var target: Int
            if available.boundary <= limit {
                target = available.boundary
            } else if let last = boundaries.lastBoundary(after: committed, atOrBefore: limit) {
                target = last
            } else if committed == start {
                // A first record longer than the segment goes whole, alone.
                target = boundaries.firstBoundary(after: start)
            } else {
                return .end(reachedInputEnd: false)
            }
            if let maxRecords = limits.maxRecords {
                let counted = boundaries.boundary(after: committed, records: maxRecords - records, atOrBefore: target)
                target = counted.boundary
                records += counted.records
            }
            committed = target
            firstByteAt = firstByteAt ?? now
            return .send(upTo: committed)
        }
        if available.inputEnded { return .end(reachedInputEnd: true) }
        if available.bufferFull && committed > start { return .end(reachedInputEnd: false) }
        return .wait(until: deadline)
    }
}
