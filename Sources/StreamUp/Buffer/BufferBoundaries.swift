/// Where records end in a buffer's storage: after each `\n` (``RecordMode/lines``), at the
/// splits of over-long records, or after any byte (``RecordMode/rawBytes``). Scans the stored
/// bytes, which happens about once per segment (when the next records overshoot its size).
///
/// Thread safety: a value type used by one cutting task, outside the buffer's lock, for held
/// bytes from the cut's start to the boundary it was given, which the writer does not touch.
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
