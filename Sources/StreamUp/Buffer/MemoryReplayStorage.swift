import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Replay bytes in one fixed block of memory, a ring over absolute offsets: at most the
/// capacity, however long the stream (any size: positions wrap with a remainder, once per
/// write or read, not per byte). The producer fills the ring in place; nothing is copied on
/// commit.
///
/// The block is its own anonymous mapping, and acknowledged whole pages are handed back to the
/// system (`madvise(MADV_DONTNEED)`) while the buffer is at most a quarter full, so what is
/// resident follows the unacknowledged bytes rather than the capacity: a producer slower than
/// the network (a followed log) keeps about a segment resident, not the whole ring.
///
/// Thread safety: see ``ReplayStorage``; the block is mapped once and never moves.
/// `released` is a `Mutex` of its own, held across the `madvise` of
/// ``acknowledge(upTo:releasingBelow:written:)`` so that two acknowledgers (the delivery task,
/// the checkpoint task) drop pages one at a time and each returns only once the pages below its
/// offset are dropped, before the buffer lets the writer reuse that room. Nothing else takes it.
final class MemoryReplayStorage: ReplayStorage, @unchecked Sendable {
    let capacity: Int
    var isDurable: Bool { false }
    private let storage: UnsafeMutableRawPointer
    /// The whole mapping (`capacity` rounded up to pages).
    let mapping: UnsafeMutableRawBufferPointer
    private let pageSize: Int
    /// The acknowledged offset last told: the bytes acknowledged after it are the ones whose
    /// pages the next call may hand back (earlier ones were, or were left to the writer).
    private let released = Mutex(0)

    init(capacity: Int) {
        precondition(capacity > 0, "a replay buffer needs room")
        self.capacity = capacity
        pageSize = AnonymousPages.size
        let length = (capacity + pageSize - 1) / pageSize * pageSize
        guard let block = AnonymousPages.map(length) else {
            fatalError("cannot map \(length) bytes for the replay buffer: errno \(errno)")
        }
        storage = block.baseAddress!
        mapping = block
    }

    deinit { AnonymousPages.unmap(mapping) }

    func writableSpace(at offset: Int, maxLength: Int) -> UnsafeMutableRawBufferPointer {
        let position = offset % capacity
        return UnsafeMutableRawBufferPointer(start: storage + position, count: min(maxLength, capacity - position))
    }

    func commit(_ space: UnsafeMutableRawBufferPointer, count: Int, at offset: Int, mark: SourceMark?) {}

    func read(at offset: Int, into destination: UnsafeMutableRawBufferPointer) -> Int {
        let position = offset % capacity
        let count = min(destination.count, capacity - position)
        destination.baseAddress!.copyMemory(from: storage + position, byteCount: count)
        return count
    }

    /// Hands back the whole pages of the bytes acknowledged since the last call, when the
    /// buffer still holds at most a quarter of its capacity: then the writer is at least three
    /// quarters of a ring away from them. A producer faster than the network keeps the ring
    /// full: when a segment (at most half the ring) is acknowledged, the next one already fills
    /// the other half, the writer is about to write these pages again, and dropping them only
    /// faults them in again at once (measured on a 2 GB pipe: +25 % system CPU, nothing saved),
    /// so they stay. Nobody reads acknowledged bytes again,
    /// and the writer cannot reach them until the buffer moves its acknowledged offset, which it
    /// does after this returns.
    func acknowledge(upTo offset: Int, releasingBelow releasable: Int, written: Int) {
        released.withLock { released in
            // An older acknowledgement that arrives after a newer one has nothing left to do.
            guard offset > released else { return }
            let start = max(released, offset - capacity)
            released = offset
            guard written - offset <= capacity / 4 else { return }
            let first = start % capacity
            let count = offset - start
            if first + count <= capacity {
                dropPages(first..<(first + count))
            } else {
                dropPages(first..<capacity)
                dropPages(0..<(first + count - capacity))
            }
        }
    }

    /// `madvise` on the whole pages inside `range` of the ring (a system call, no callback);
    /// the last page counts as whole when the range reaches the end of the ring.
    private func dropPages(_ range: Range<Int>) {
        let low = (range.lowerBound + pageSize - 1) / pageSize * pageSize
        let high = range.upperBound == capacity ? mapping.count : range.upperBound / pageSize * pageSize
        guard high > low else { return }
        AnonymousPages.release(UnsafeMutableRawBufferPointer(start: storage + low, count: high - low))
    }
}
