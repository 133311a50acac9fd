import Foundation
import StreamUpSystem

/// The body of one segment request: the replay buffer's bytes from `start` on, as far as the
/// segment's ``SegmentPlan`` allows, read in place of a copy of them. A retry or a re-sent body
/// gets a new window over the same bytes.
///
/// `read` runs on URLSession's thread and blocks there (DESIGN.md fact 3) until a whole record
/// is there, the input ends, the buffer fails, the window is aborted, or the plan's deadline
/// passes; with `blocking: false` it says `wouldBlock` instead (a compressing stage above then
/// flushes what it holds).
///
/// Thread safety: `plan`, `position` and `abortion` are read and changed only under the
/// buffer's lock (the read loop holds it while it decides); the outcome is also kept in a
/// `Mutex` for the delivery task, which reads it after the request.
final class WindowSource: BodySource, @unchecked Sendable {
    /// What the window carried: `start..<end`, and whether that reached the end of the input.
    struct Outcome: Equatable, Sendable {
        var start: Int
        var end: Int
        var reachedInputEnd: Bool
        var carried: Range<Int> { start..<end }
    }

    let buffer: ReplayBuffer
    private var plan: SegmentPlan<ContinuousClock.Instant>
    private var position: Int
    private var abortion: StreamUpError?
    private let published: Mutex<Outcome>

    init(buffer: ReplayBuffer, start: Int, limits: SegmentPlan<ContinuousClock.Instant>.Limits) {
        self.buffer = buffer
        self.plan = SegmentPlan(start: start, limits: limits)
        self.position = start
        self.published = Mutex(Outcome(start: start, end: start, reachedInputEnd: false))
    }

    /// What the window has handed out so far.
    var outcome: Outcome { published.withLock { $0 } }

    /// Ends the window with `error`: a read waiting in it returns at once and fails (so that a
    /// cancel of the request, which URLSession runs on the thread the read holds, gets through).
    func abort(_ error: StreamUpError) {
        buffer.withLockForWindow { condition in
            if abortion == nil { abortion = error }
            condition.broadcast()
        }
    }

    func read(into destination: UnsafeMutableRawBufferPointer, blocking: Bool) throws -> BodyRead {
        guard !destination.isEmpty else { return .wouldBlock }
        let step = try buffer.nextWindowStep(
            plan: &plan, at: position, maxLength: destination.count, blocking: blocking, abortion: { abortion })
        switch step {
        case .end(let reachedInputEnd):
            published.withLock { $0.reachedInputEnd = reachedInputEnd }
            return .end
        case .wouldBlock:
            return .wouldBlock
        case .copy(let offset, let count):
            let copied = try buffer.storage.read(at: offset, into: UnsafeMutableRawBufferPointer(rebasing: destination[..<count]))
            buffer.withLockForWindow { _ in position = offset + copied }
            published.withLock { $0.end = offset + copied }
            return .bytes(copied)
        }
    }
}

/// Where records end in a buffer's storage: after each `\n` (``RecordMode/lines``), at the
/// splits of over-long records, or after any byte (``RecordMode/rawBytes``). Scans the stored
/// bytes, which happens about once per segment (when the next records overshoot its size).
///
/// Thread safety: used under the replay buffer's lock, for bytes below its boundary.
struct BufferBoundaries: RecordBoundaryFinder {
    let storage: any ReplayStorage
    let records: RecordMode
    let splits: [Int]
    /// The last boundary written: nothing past it is scanned (the ring holds old bytes there).
    let end: Int

    func lastBoundary(after offset: Int, atOrBefore limit: Int) -> Int? {
        guard limit > offset else { return nil }
        let limit = min(limit, end)
        if records == .rawBytes { return limit }
        let split = splits.last { $0 > offset && $0 <= limit }
        var end = limit
        var found: Int?
        scan: while end > offset && (split.map { end > $0 } ?? true) {
            let from = max(offset, end - Self.scanSize)
            var piece = [UInt8](repeating: 0, count: end - from)
            guard read(from: from, into: &piece) else { break }
            if let newline = piece.withUnsafeBytes({ ReplayBuffer.lastNewline(in: $0) }) {
                found = from + newline + 1
                break scan
            }
            end = from
        }
        switch (found, split) {
        case (let found?, let split?): return max(found, split)
        case (let found?, nil): return found
        case (nil, let split): return split
        }
    }

    func firstBoundary(after offset: Int) -> Int {
        if records == .rawBytes { return offset + 1 }
        let split = splits.first { $0 > offset }
        var start = offset
        while start < end && (split.map { start < $0 } ?? true) {
            var piece = [UInt8](repeating: 0, count: min(Self.scanSize, end - start))
            guard read(from: start, into: &piece) else { break }
            if let newline = piece.withUnsafeBytes({ ReplayBuffer.firstNewline(in: $0) }) {
                return min(start + newline + 1, split ?? .max)
            }
            start += piece.count
        }
        // No newline before `end`: the next boundary is a split, or `end` itself (the last
        // boundary written: after the input's end, a last record without its newline).
        precondition(end > offset, "no record boundary after \(offset)")
        return min(split ?? end, end)
    }

    func boundary(after offset: Int, records wanted: Int, atOrBefore limit: Int) -> (boundary: Int, records: Int) {
        if records == .rawBytes { return (min(limit, offset + wanted), min(limit - offset, wanted)) }
        var found = 0
        var position = offset
        var splitIndex = splits.firstIndex { $0 > offset } ?? splits.endIndex
        while position < limit {
            var piece = [UInt8](repeating: 0, count: min(Self.scanSize, limit - position))
            guard read(from: position, into: &piece) else { break }
            var index = 0
            while let newline = piece.withUnsafeBytes({ ReplayBuffer.firstNewline(in: UnsafeRawBufferPointer(rebasing: $0[index...])) }) {
                let end = position + index + newline + 1
                // Splits of over-long records before this newline are records too.
                while splitIndex < splits.endIndex, splits[splitIndex] < end {
                    found += 1
                    if found == wanted { return (splits[splitIndex], found) }
                    splitIndex += 1
                }
                found += 1
                if found == wanted { return (end, found) }
                index += newline + 1
            }
            position += piece.count
        }
        while splitIndex < splits.endIndex, splits[splitIndex] <= limit, found < wanted {
            found += 1
            if found == wanted { return (splits[splitIndex], found) }
            splitIndex += 1
        }
        return (limit, found)
    }

    private static let scanSize = 64 * 1024

    /// Fills `piece` from `offset` (shrinking it at the end of what the storage holds).
    private func read(from offset: Int, into piece: inout [UInt8]) -> Bool {
        var filled = 0
        while filled < piece.count {
            let count = piece.withUnsafeMutableBytes { bytes in
                (try? storage.read(at: offset + filled, into: UnsafeMutableRawBufferPointer(rebasing: bytes[filled...]))) ?? 0
            }
            if count <= 0 { break }
            filled += count
        }
        piece.removeLast(piece.count - filled)
        return filled > 0
    }
}
