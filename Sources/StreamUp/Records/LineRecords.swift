import Foundation

/// Cuts what a producer reads into whole lines and turns each into a record: formatted by a
/// ``RecordFormatter``, or kept as it is (a line and its `\n`). A line is held until its `\n`
/// comes (or the input ends); a line longer than `maxLine` is cut there, so memory stays
/// bounded. Pure: bytes in, records out, no I/O.
///
/// Each record comes with the source range it was made from (`start..<end`, `end` after the
/// line's `\n`), so a producer can mark it and an acknowledgement maps back to a position.
///
/// Thread safety: a value type, confined to its producer's thread.
struct LineRecords {
    /// One record and the source positions of the line it came from.
    struct Record {
        var bytes: [UInt8]
        var start: Int64
        var end: Int64
    }

    private(set) var formatter: RecordFormatter?
    let maxLine: Int
    private var carry: [UInt8] = []
    private var carryStart: Int64 = 0
    /// Lines cut at `maxLine`.
    private(set) var cutLines = 0

    /// - Parameter maxLine: where longer lines are cut (nil: the formatter's
    ///   ``RecordFormatter/maxLineBytes``, or 1 MiB without one).
    init(formatter: RecordFormatter?, maxLine: Int? = nil) {
        let maxLine = maxLine ?? formatter?.maxLineBytes ?? 1 << 20
        precondition(maxLine > 0, "lines need room")
        self.formatter = formatter
        self.maxLine = maxLine
    }

    /// Whether a partial line is held.
    var isHoldingPartialLine: Bool { !carry.isEmpty }

    /// The records completed by `bytes`, read from the source at `position` at `time`.
    mutating func take(_ bytes: UnsafeRawBufferPointer, from position: Int64, readAt time: Date) -> [Record] {
        if carry.isEmpty { carryStart = position }
        var records: [Record] = []
        var lineStart = 0
        while lineStart < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[lineStart...])
            guard let newline = rest.firstIndex(of: 0x0A) else {
                carry.append(contentsOf: rest)
                while carry.count >= maxLine {
                    // Too long to hold: cut here.
                    let piece = Array(carry[..<maxLine])
                    carry.removeFirst(maxLine)
                    cutLines += 1
                    records.append(record(piece, start: carryStart, length: maxLine, time: time))
                    carryStart += Int64(maxLine)
                }
                return records
            }
            let end = lineStart + (newline - rest.startIndex)
            let line = UnsafeRawBufferPointer(rebasing: bytes[lineStart..<end])
            let length = carry.count + line.count + 1
            if carry.isEmpty {
                records.append(record(line, start: carryStart, length: length, time: time))
            } else {
                carry.append(contentsOf: line)
                records.append(record(carry, start: carryStart, length: length, time: time))
                carry.removeAll(keepingCapacity: true)
            }
            carryStart += Int64(length)
            lineStart = end + 1
        }
        return records
    }

    /// The held partial line as a record (the input ended, or its file was left behind).
    mutating func flush(readAt time: Date) -> Record? {
        guard !carry.isEmpty else { return nil }
        defer {
            carryStart += Int64(carry.count)
            carry.removeAll(keepingCapacity: true)
        }
        return record(carry, start: carryStart, length: carry.count, time: time)
    }

    private mutating func record(_ line: [UInt8], start: Int64, length: Int, time: Date) -> Record {
        line.withUnsafeBytes { record($0, start: start, length: length, time: time) }
    }

    private mutating func record(_ line: UnsafeRawBufferPointer, start: Int64, length: Int, time: Date) -> Record {
        var bytes: [UInt8] = []
        if formatter != nil {
            formatter!.append(line, readAt: time, to: &bytes)
        } else {
            bytes.reserveCapacity(line.count + 1)
            bytes.append(contentsOf: line)
            bytes.append(0x0A)
        }
        return Record(bytes: bytes, start: start, end: start + Int64(length))
    }
}
