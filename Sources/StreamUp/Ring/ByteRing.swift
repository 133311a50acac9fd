/// The index arithmetic of a fixed-capacity byte ring: where the next bytes may be written and
/// where the oldest unread bytes sit. It owns no memory and takes no lock; its owner holds the
/// storage and guards the ring.
///
/// Both counters only grow (they count bytes ever written and ever read); a position in storage is
/// the counter masked by `capacity - 1`, so `capacity` is a power of two.
///
///     storage:  [ free | readable bytes ........ | free            ]
///                       ^ readCount & mask       ^ writeCount & mask
///     invariant: 0 <= writeCount - readCount <= capacity
///
/// When the readable bytes wrap past the end of storage, they come back as two spans.
///
/// Thread safety: a value type; its owner confines it or guards it with a lock.
struct ByteRing: Sendable {
    /// A contiguous piece of storage, as an offset and a length.
    struct Span: Equatable, Sendable {
        var offset: Int
        var count: Int
    }

    /// The number of bytes the ring holds when full (a power of two).
    let capacity: Int
    private let mask: Int
    /// Bytes written since creation.
    private(set) var writeCount: Int = 0
    /// Bytes read since creation.
    private(set) var readCount: Int = 0

    /// Creates an empty ring that holds `minimumCapacity` bytes or more, rounded up to a power of two.
    init(minimumCapacity: Int) {
        precondition(minimumCapacity > 0, "a ring needs a positive capacity")
        var capacity = 1
        while capacity < minimumCapacity { capacity <<= 1 }
        self.capacity = capacity
        self.mask = capacity - 1
    }

    /// Bytes written and not yet read.
    var readableCount: Int { writeCount - readCount }
    /// Bytes that can be written before the ring is full.
    var writableCount: Int { capacity - readableCount }

    /// The free space, in storage order: the first span starts where the next byte goes.
    func writableSpans() -> (Span, Span) {
        spans(start: writeCount & mask, count: writableCount)
    }

    /// The unread bytes, oldest first.
    func readableSpans() -> (Span, Span) {
        spans(start: readCount & mask, count: readableCount)
    }

    /// Records that `count` bytes were copied into the start of the writable spans.
    mutating func commitWrite(_ count: Int) {
        precondition(count >= 0 && count <= writableCount, "wrote \(count) bytes into \(writableCount) of space")
        writeCount += count
        assertInvariants()
    }

    /// Records that `count` bytes were copied out of the start of the readable spans.
    mutating func commitRead(_ count: Int) {
        precondition(count >= 0 && count <= readableCount, "read \(count) bytes of \(readableCount)")
        readCount += count
        assertInvariants()
    }

    private func spans(start: Int, count: Int) -> (Span, Span) {
        let first = min(count, capacity - start)
        return (Span(offset: start, count: first), Span(offset: 0, count: count - first))
    }

    private func assertInvariants() {
        assert(testOnly_invariantsHold(), "ring invariants broken: written \(writeCount), read \(readCount), capacity \(capacity)")
    }

    /// Whether the counters are consistent; tests call this after every step.
    func testOnly_invariantsHold() -> Bool {
        readCount >= 0 && readCount <= writeCount && writeCount - readCount <= capacity
            && capacity & mask == 0
    }
}
