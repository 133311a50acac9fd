import Foundation

/// Bytes of a stream from the last acknowledged offset on: sent-but-unacknowledged bytes plus
/// not-yet-sent ones, with a hard cap. Segments read windows of it by absolute offset; an
/// acknowledgement frees everything below its offset.
///
///     acknowledged ... [ held bytes ............................ ] end
///                      ^ acknowledgedOffset                       ^ endOffset
///
/// Storage is one fixed block indexed by a ``ByteRing`` over absolute offsets, so memory is
/// exactly the capacity (rounded up to a power of two), however long the stream.
///
/// The appender blocks while the buffer is at its cap (backpressure reaches the producer); a
/// reader blocks until bytes past its offset arrive, the stream ends, or its deadline passes.
///
/// Thread safety: guarded by `condition`; one appending thread, one reading thread, acks from any.
final class ReplayBuffer: @unchecked Sendable {
    private let condition = NSCondition()
    /// Counts bytes by absolute stream offset: `readCount` is the acknowledged offset,
    /// `writeCount` the end; storage holds exactly the bytes between them.
    private var ring: ByteRing
    private let storage: UnsafeMutableRawPointer
    private var ended = false
    private var closed = false

    init(capacity: Int) {
        precondition(capacity > 0, "a replay buffer needs room")
        ring = ByteRing(minimumCapacity: capacity)
        storage = UnsafeMutableRawPointer.allocate(byteCount: ring.capacity, alignment: 64)
    }

    deinit { storage.deallocate() }

    /// Offset of the first byte not yet acknowledged.
    var acknowledgedOffset: Int { condition.withLock { ring.readCount } }
    /// Offset one past the last byte appended.
    var endOffset: Int { condition.withLock { ring.writeCount } }
    /// Bytes held (unacknowledged).
    var heldCount: Int { condition.withLock { ring.readableCount } }

    /// Appends `source`, waiting while the buffer is full. Returns false if it was closed.
    func append(_ source: UnsafeRawBufferPointer) -> Bool {
        var next = 0
        condition.lock()
        defer { condition.unlock() }
        while next < source.count {
            while ring.writableCount == 0 && !closed { condition.wait() }
            if closed { return false }
            // Free space is one contiguous piece at a time; the loop comes back for the rest.
            let span = ring.writableSpans().0
            let copied = min(span.count, source.count - next)
            (storage + span.offset).copyMemory(from: source.baseAddress! + next, byteCount: copied)
            ring.commitWrite(copied)
            next += copied
            condition.broadcast()
        }
        return true
    }

    /// The source has ended: readers that reach the end get `.end` instead of waiting.
    func markEnded() {
        condition.withLock {
            ended = true
            condition.broadcast()
        }
    }

    /// Stops everything: waiting appenders and readers return.
    func close() {
        condition.withLock {
            closed = true
            condition.broadcast()
        }
    }

    /// Frees the bytes below `offset` (the server acknowledged them).
    func acknowledge(upTo offset: Int) {
        condition.withLock {
            ring.commitRead(min(max(offset - ring.readCount, 0), ring.readableCount))
            condition.broadcast()
        }
    }

    /// What a reader at `offset` finds by `deadline`.
    enum ReadResult: Equatable {
        case bytes(Int)
        case timedOut
        case end
        case closed
    }

    /// Copies bytes from `offset` on into `destination` (one contiguous piece), waiting until
    /// some are there, or until `deadline` (nil: none; `NSCondition` traps on
    /// `Date.distantFuture` on Linux).
    func read(from offset: Int, into destination: UnsafeMutableRawBufferPointer, deadline: Date?) -> ReadResult {
        condition.lock()
        defer { condition.unlock() }
        precondition(offset >= ring.readCount, "read below the acknowledged offset")
        while true {
            if closed { return .closed }
            if offset < ring.writeCount {
                let position = offset & (ring.capacity - 1)
                let count = min(ring.writeCount - offset, ring.capacity - position, destination.count)
                destination.baseAddress!.copyMemory(from: storage + position, byteCount: count)
                return .bytes(count)
            }
            if ended { return .end }
            if let deadline {
                if !condition.wait(until: deadline) { return .timedOut }
            } else {
                condition.wait()
            }
        }
    }
}
