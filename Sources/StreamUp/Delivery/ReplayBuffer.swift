import Foundation

/// Bytes of a stream from the last acknowledged offset on: sent-but-unacknowledged bytes plus
/// not-yet-sent ones, with a hard cap. Segments read windows of it by absolute offset; an
/// acknowledgement frees everything below its offset.
///
///     acknowledged ... [ held bytes ............................ ] appendedCount
///                      ^ startOffset (acknowledged)               ^ end
///
/// The appender blocks while the buffer is at its cap (backpressure reaches the producer); a
/// reader blocks until bytes past its offset arrive, the stream ends, or its deadline passes.
///
/// Thread safety: guarded by `condition`; one appending thread, one reading thread, acks from any.
final class ReplayBuffer: @unchecked Sendable {
    private let condition = NSCondition()
    private let capacity: Int
    private var bytes: [UInt8] = []
    private var headIndex = 0  // bytes[..<headIndex] are acknowledged and await compaction
    private var startOffset = 0
    private var ended = false
    private var closed = false

    init(capacity: Int) {
        precondition(capacity > 0, "a replay buffer needs room")
        self.capacity = capacity
        bytes.reserveCapacity(capacity)
    }

    /// Offset of the first byte not yet acknowledged.
    var acknowledgedOffset: Int { condition.withLock { startOffset } }
    /// Offset one past the last byte appended.
    var endOffset: Int { condition.withLock { startOffset + bytes.count - headIndex } }
    /// Bytes held (unacknowledged).
    var heldCount: Int { condition.withLock { bytes.count - headIndex } }

    /// Appends `source`, waiting while the buffer is full. Returns false if it was closed.
    func append(_ source: UnsafeRawBufferPointer) -> Bool {
        var remaining = source[...]
        condition.lock()
        defer { condition.unlock() }
        while !remaining.isEmpty {
            while bytes.count - headIndex >= capacity && !closed { condition.wait() }
            if closed { return false }
            compact()
            let room = capacity - (bytes.count - headIndex)
            let piece = remaining.prefix(room)
            bytes.append(contentsOf: piece)
            remaining = remaining.dropFirst(piece.count)
            condition.broadcast()
        }
        return true
    }

    /// The source has ended: readers that reach the end get nil instead of waiting.
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
            let count = min(max(offset - startOffset, 0), bytes.count - headIndex)
            headIndex += count
            startOffset += count
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

    /// Copies bytes from `offset` on into `destination`, waiting until some are there, or until
    /// `deadline` (nil: no deadline; `NSCondition` traps on `Date.distantFuture` on Linux).
    func read(from offset: Int, into destination: UnsafeMutableRawBufferPointer, deadline: Date?) -> ReadResult {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if closed { return .closed }
            let index = headIndex + (offset - startOffset)
            precondition(offset >= startOffset, "read below the acknowledged offset")
            if index < bytes.count {
                let count = min(destination.count, bytes.count - index)
                bytes.withUnsafeBytes { held in
                    destination.baseAddress!.copyMemory(from: held.baseAddress! + index, byteCount: count)
                }
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

    /// Drops acknowledged bytes from the front once they are half the storage (amortised O(1)).
    private func compact() {
        if headIndex > 0 && headIndex >= bytes.count / 2 {
            bytes.removeFirst(headIndex)
            headIndex = 0
        }
    }
}
