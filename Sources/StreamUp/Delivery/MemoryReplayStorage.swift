/// Replay bytes in one fixed block of memory, a ring over absolute offsets: memory is exactly
/// the capacity, however long the stream (any size: positions wrap with a remainder, once per
/// write or read, not per byte). The producer fills the ring in place; nothing is copied on
/// commit.
///
/// Thread safety: see ``ReplayStorage``; the block is allocated once and never moves.
final class MemoryReplayStorage: ReplayStorage, @unchecked Sendable {
    let capacity: Int
    var isDurable: Bool { false }
    private let storage: UnsafeMutableRawPointer

    init(capacity: Int) {
        precondition(capacity > 0, "a replay buffer needs room")
        self.capacity = capacity
        storage = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 64)
    }

    deinit { storage.deallocate() }

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

    func acknowledge(upTo offset: Int, releasingBelow releasable: Int) {}
}
