/// Where a ``ReplayBuffer`` keeps its bytes, addressed by absolute stream offset.
///
/// The buffer decides what is held (from its acknowledged offset to its end, never more than
/// ``capacity``); a storage only stores and returns bytes. It may store or return fewer bytes
/// than asked (a ring's wrap, a file's end); the buffer comes back for the rest.
///
/// Thread safety: called only under the replay buffer's lock.
protocol ReplayStorage: AnyObject {
    /// The most bytes held at once.
    var capacity: Int { get }
    /// Whether stored bytes survive the process (a spool on disk).
    var isDurable: Bool { get }
    /// Stores `source` at `offset` (the current end); returns how many bytes it stored, at least one.
    func write(_ source: UnsafeRawBufferPointer, at offset: Int) throws(StreamUpError) -> Int
    /// Copies held bytes from `offset` into `destination`; returns how many, at least one.
    func read(at offset: Int, into destination: UnsafeMutableRawBufferPointer) throws(StreamUpError) -> Int
    /// The bytes below `offset` are acknowledged and will never be read again.
    func release(below offset: Int) throws(StreamUpError)
}

/// Replay bytes in one fixed block of memory, a ring over absolute offsets: memory is exactly
/// the capacity (rounded up to a power of two), however long the stream.
///
/// Thread safety: called only under the replay buffer's lock.
final class MemoryReplayStorage: ReplayStorage {
    let capacity: Int
    var isDurable: Bool { false }
    private let storage: UnsafeMutableRawPointer

    init(minimumCapacity: Int) {
        precondition(minimumCapacity > 0, "a replay buffer needs room")
        capacity = ByteRing(minimumCapacity: minimumCapacity).capacity
        storage = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 64)
    }

    deinit { storage.deallocate() }

    func write(_ source: UnsafeRawBufferPointer, at offset: Int) -> Int {
        let position = offset & (capacity - 1)
        let count = min(source.count, capacity - position)
        (storage + position).copyMemory(from: source.baseAddress!, byteCount: count)
        return count
    }

    func read(at offset: Int, into destination: UnsafeMutableRawBufferPointer) -> Int {
        let position = offset & (capacity - 1)
        let count = min(destination.count, capacity - position)
        destination.baseAddress!.copyMemory(from: storage + position, byteCount: count)
        return count
    }

    func release(below offset: Int) {}
}
