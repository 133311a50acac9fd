import Foundation

/// Bytes of a stream from the last acknowledged offset on: sent-but-unacknowledged bytes plus
/// not-yet-sent ones, with a hard cap. Segments read windows of it by absolute offset; an
/// acknowledgement frees everything below its offset.
///
///     acknowledged ... [ held bytes ............................ ] end
///                      ^ acknowledgedOffset                       ^ endOffset
///
/// The bytes themselves live in a ``ReplayStorage``: a ring in memory, or a spool on disk.
/// The appender blocks while the buffer is at its cap (backpressure reaches the producer); a
/// reader blocks until bytes past its offset arrive, the stream ends, or its deadline passes.
/// A storage failure (a full disk) closes the buffer and is kept in ``failure``.
///
/// Thread safety: guarded by `condition`; one appending thread, one reading thread, acks from any.
/// Storage calls run under the lock too, so the storage needs no lock of its own.
final class ReplayBuffer: @unchecked Sendable {
    private let condition = NSCondition()
    private let storage: any ReplayStorage
    private var start: Int
    private var end: Int
    private var ended = false
    private var closed = false
    private var storageFailure: StreamUpError?
    private var pauseCount = 0
    private var pausedSeconds = 0.0

    /// A buffer over `storage` that already holds the bytes `start..<end` (a recovered spool).
    init(storage: any ReplayStorage, start: Int = 0, end: Int = 0) {
        precondition(0 <= start && start <= end && end - start <= storage.capacity, "held bytes exceed the storage")
        self.storage = storage
        self.start = start
        self.end = end
    }

    /// A buffer in memory holding at most `capacity` bytes (rounded up to a power of two).
    convenience init(capacity: Int) {
        self.init(storage: MemoryReplayStorage(minimumCapacity: capacity))
    }

    /// Offset of the first byte not yet acknowledged.
    var acknowledgedOffset: Int { condition.withLock { start } }
    /// Offset one past the last byte appended.
    var endOffset: Int { condition.withLock { end } }
    /// Bytes held (unacknowledged).
    var heldCount: Int { condition.withLock { end - start } }
    /// Whether appended bytes survive the process.
    var isDurable: Bool { storage.isDurable }
    /// Whether the source has ended (everything it will ever hold has been appended).
    var isEnded: Bool { condition.withLock { ended } }
    /// How often the appender waited because the buffer was full, and for how long in total.
    var pauses: (count: Int, seconds: Double) { condition.withLock { (pauseCount, pausedSeconds) } }
    /// The storage failure that closed the buffer, if one did.
    var failure: StreamUpError? { condition.withLock { storageFailure } }

    /// Appends `source`, waiting while the buffer is full. Returns false if it was closed.
    func append(_ source: UnsafeRawBufferPointer) -> Bool {
        var next = 0
        condition.lock()
        defer { condition.unlock() }
        while next < source.count {
            if end - start == storage.capacity && !closed {
                let pausedAt = Date()
                pauseCount += 1
                while end - start == storage.capacity && !closed { condition.wait() }
                pausedSeconds += Date().timeIntervalSince(pausedAt)
            }
            if closed { return false }
            let room = storage.capacity - (end - start)
            let piece = UnsafeRawBufferPointer(rebasing: source[next..<min(source.count, next + room)])
            do {
                let stored = try storage.write(piece, at: end)
                end += stored
                next += stored
            } catch {
                storageFailure = error
                closed = true
            }
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
            let newStart = min(max(offset, start), end)
            guard newStart > start else { return }
            start = newStart
            do throws(StreamUpError) {
                try storage.release(below: start)
            } catch {
                storageFailure = error
                closed = true
            }
            condition.broadcast()
        }
    }

    /// Whether a reader at `offset` would find something now: bytes, the end, or a closed buffer.
    func isReadable(from offset: Int) -> Bool {
        condition.withLock { hasNews(for: offset) }
    }

    /// Blocks until a reader at `offset` would find something (see ``isReadable(from:)``).
    func waitUntilReadable(from offset: Int) {
        condition.withLock {
            while !hasNews(for: offset) { condition.wait() }
        }
    }

    /// Whether a reader at `offset` would not wait: bytes, the end, or a closed buffer. Under the lock.
    private func hasNews(for offset: Int) -> Bool {
        closed || ended || offset < end
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
        precondition(offset >= start, "read below the acknowledged offset")
        while true {
            if closed { return .closed }
            if offset < end {
                let window = UnsafeMutableRawBufferPointer(rebasing: destination[..<min(destination.count, end - offset)])
                do {
                    return .bytes(try storage.read(at: offset, into: window))
                } catch {
                    storageFailure = error
                    closed = true
                    condition.broadcast()
                    return .closed
                }
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
