import Foundation

/// The records of one cut segment, `range` of the replay buffer, as the bottom stage of its
/// body: reads copy the stored bytes (from memory or the spool) and never wait, since the
/// segment's end is fixed before its body is built. The buffer keeps those bytes until they are
/// acknowledged, which only the delivery task that reads them does.
///
/// Thread safety: one reading task at a time (``BodySource``); not Sendable.
final class WindowSource: BodySource {
    let buffer: ReplayBuffer
    let range: Range<Int>
    private var position: Int

    init(buffer: ReplayBuffer, range: Range<Int>) {
        self.buffer = buffer
        self.range = range
        self.position = range.lowerBound
    }

    func read(into destination: UnsafeMutableRawBufferPointer, blocking: Bool) throws -> BodyRead {
        guard position < range.upperBound else { return .end }
        guard !destination.isEmpty else { return .wouldBlock }
        let count = min(destination.count, range.upperBound - position)
        let copied = try buffer.storage.read(at: position, into: UnsafeMutableRawBufferPointer(rebasing: destination[..<count]))
        guard copied > 0 else {
            throw StreamUpError(.io, "the buffer holds no bytes at \(position) of the segment \(range)")
        }
        position += copied
        return .bytes(copied)
    }
}

@available(*, unavailable)
extension WindowSource: Sendable {}
