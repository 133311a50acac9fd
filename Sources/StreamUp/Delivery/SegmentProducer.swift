import Foundation

/// The body of one segment request: the replay buffer's bytes from `offset` on, until the
/// segment has `maxBytes`, has run for `maxDuration` with at least one byte sent, or the source
/// ends. Runs on a thread of its own (the replay buffer's reads block).
///
/// Thread safety: immutable apart from `sentCount`, which is guarded by its lock and read by the
/// uploader after the request.
final class SegmentProducer: Producer, @unchecked Sendable {
    let replay: ReplayBuffer
    let offset: Int
    let maxBytes: Int
    let maxDuration: Duration
    private let lock = NSLock()
    private var sent = 0
    private var sawEnd = false

    init(replay: ReplayBuffer, offset: Int, maxBytes: Int, maxDuration: Duration) {
        self.replay = replay
        self.offset = offset
        self.maxBytes = maxBytes
        self.maxDuration = maxDuration
    }

    /// Bytes this segment's body carried, and whether it reached the end of the source.
    var outcome: (sent: Int, reachedEnd: Bool) { lock.withLock { (sent, sawEnd) } }

    func produce(into writer: StreamWriter) async throws {
        try await writer.runBlocking { [self] blocking in
            var firstByteAt: Date?
            let seconds = maxDuration.timeInterval
            while true {
                let total = lock.withLock { sent }
                if total >= maxBytes { return }
                // The clock starts at the first byte: a segment waits as long as it takes for one.
                let deadline = firstByteAt?.addingTimeInterval(seconds)
                if let deadline, Date() >= deadline { return }
                var result = ReplayBuffer.ReadResult.timedOut
                _ = try blocking.fill(maxLength: maxBytes - total) { space in
                    result = replay.read(from: offset + total, into: space, deadline: deadline)
                    if case .bytes(let count) = result { return count }
                    return 0
                }
                switch result {
                case .bytes(let count):
                    firstByteAt = firstByteAt ?? Date()
                    lock.withLock { sent += count }
                case .timedOut: return
                case .end:
                    lock.withLock { sawEnd = true }
                    return
                case .closed: throw CancellationError()
                }
            }
        }
    }
}
