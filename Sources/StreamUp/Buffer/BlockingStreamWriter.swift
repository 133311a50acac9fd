import Foundation

/// The blocking form of ``StreamWriter`` for a producer running on its own thread: it writes in
/// line with the writer's other writers (tasks or threads), each write whole.
///
/// Thread safety: confined to the producer's thread; its waits park the thread on a condition
/// of its own, entered in the buffer's waiter table and woken after the buffer's lock is released.
package struct BlockingStreamWriter: Sendable {
    let buffer: ReplayBuffer
    /// This thread's name in the buffer's line of writers.
    let id: Int

    /// Lets `fill` write into free space in place, in this thread's turn, blocking first while
    /// the buffer is full. The bytes it writes are `mark`'s source bytes (nil: none). Returns what
    /// `fill` returned; throws once the upload failed or the producer was cancelled.
    package func fill(maxLength: Int, mark: SourceMark? = nil, _ fill: (UnsafeMutableRawBufferPointer) throws -> Int) throws -> Int {
        try buffer.takeTurnBlocking(id, needs: 1, refill: buffer.spaceWatermark, quick: false)
        defer { buffer.leaveTurn(id) }
        while true {
            if let count = try buffer.withWritableSpace(maxLength: maxLength, mark: mark, fill) { return count }
            try buffer.waitForSpaceBlocking(id)
        }
    }

    /// Notes that the source bytes `mark` describes were read and left out (a filtered record):
    /// the source's position passes them once what was written before is acknowledged.
    package func skip(_ mark: SourceMark) {
        buffer.skip(mark)
    }

    /// Writes all of `bytes` (records made from `mark`'s source bytes, or nil) in this thread's
    /// turn, blocking while the buffer is full.
    package func write(_ bytes: [UInt8], mark: SourceMark?) throws {
        try bytes.withUnsafeBytes { try write($0, mark: mark) }
    }

    /// Writes all of `bytes` (`mark`'s source bytes, or nil) in this thread's turn, blocking
    /// while the buffer is full.
    package func write(_ bytes: UnsafeRawBufferPointer, mark: SourceMark?) throws {
        guard !bytes.isEmpty else { return }
        try buffer.takeTurnBlocking(id, needs: 1, refill: buffer.spaceWatermark, quick: true)
        defer { buffer.leaveTurn(id) }
        var offset = 0
        _ = try buffer.write(bytes, from: &offset, mark: mark, writer: id, waiting: .parks)
    }
}
