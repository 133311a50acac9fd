import Foundation

/// Cuts what a producer reads into whole lines and turns each into a record: formatted by a
/// ``RecordFormatter``, or kept as it is (a line and its `\n`). A line is held until its `\n`
/// comes (or the input ends). A line whose record would be longer than the formatter's
/// ``RecordFormatter/maxRecordBytes`` (without one: a line longer than `maxLine`) is cut into
/// pieces, each the longest start of the rest that fits (``RecordFormatter/pieceLength(_:complete:)``),
/// whether the line came in one read or in many: the pieces depend on the bytes alone, and
/// memory stays bounded.
///
/// Each record comes with the source range it was made from (`start..<end`, `end` after the
/// line's `\n`), so a producer can mark it and an acknowledgement maps back to a position.
/// Pure: bytes in, records out, no I/O.
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
    /// Where lines are cut without a formatter.
    let maxLine: Int
    private var carry: [UInt8] = []
    private var carryStart: Int64 = 0
    /// Pieces cut from lines too long for one record.
    private(set) var cutLines = 0

    /// - Parameter maxLine: where lines are cut when there is no formatter.
    init(formatter: RecordFormatter?, maxLine: Int = 1 << 20) {
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
                cutHeldLine(into: &records, time: time)
                return records
            }
            let end = lineStart + (newline - rest.startIndex)
            let line = UnsafeRawBufferPointer(rebasing: bytes[lineStart..<end])
            if carry.isEmpty {
                emit(line, terminated: true, into: &records, time: time)
            } else {
                var held = carry
                carry = []
                held.append(contentsOf: line)
                held.withUnsafeBytes { emit($0, terminated: true, into: &records, time: time) }
                held.removeAll(keepingCapacity: true)
                carry = held
            }
            lineStart = end + 1
        }
        return records
    }

    /// The held partial line as records (the input ended, or its file was left behind).
    mutating func flush(readAt time: Date) -> [Record] {
        guard !carry.isEmpty else { return [] }
        var records: [Record] = []
        let held = carry
        carry = []
        held.withUnsafeBytes { emit($0, terminated: false, into: &records, time: time) }
        return records
    }

    /// How much of the start of `line` makes one record.
    private mutating func pieceLength(_ line: UnsafeRawBufferPointer, complete: Bool) -> Int {
        if formatter != nil { return formatter!.pieceLength(line, complete: complete) }
        return min(line.count, maxLine)
    }

    /// Cuts off the pieces of the held line that are sure whatever follows: each ends at least
    /// 4 bytes before what is held, so no UTF-8 sequence at a cut is judged before it is whole.
    private mutating func cutHeldLine(into records: inout [Record], time: Date) {
        while true {
            let length = carry.withUnsafeBytes { pieceLength($0, complete: false) }
            guard length + 4 <= carry.count else { return }
            let piece = Array(carry[..<length])
            carry.removeFirst(length)
            cutLines += 1
            records.append(record(piece, length: length, time: time))
        }
    }

    /// The records of a whole line: one, or its pieces; the last one's source range takes in
    /// the `\n` when `terminated`.
    private mutating func emit(_ line: UnsafeRawBufferPointer, terminated: Bool, into records: inout [Record], time: Date) {
        var rest = line
        while true {
            let length = pieceLength(rest, complete: true)
            guard length < rest.count else {
                records.append(record(rest, length: rest.count + (terminated ? 1 : 0), time: time))
                return
            }
            cutLines += 1
            records.append(record(UnsafeRawBufferPointer(rebasing: rest[..<(rest.startIndex + length)]), length: length, time: time))
            rest = UnsafeRawBufferPointer(rebasing: rest[(rest.startIndex + length)...])
        }
    }

    private mutating func record(_ line: [UInt8], length: Int, time: Date) -> Record {
        line.withUnsafeBytes { record($0, length: length, time: time) }
    }

    /// The record of `line`, which took `length` bytes of the source from where the last one
    /// ended.
    private mutating func record(_ line: UnsafeRawBufferPointer, length: Int, time: Date) -> Record {
        var bytes: [UInt8] = []
        if formatter != nil {
            formatter!.append(line, readAt: time, to: &bytes)
        } else {
            bytes.reserveCapacity(line.count + 1)
            bytes.append(contentsOf: line)
            bytes.append(0x0A)
        }
        defer { carryStart += Int64(length) }
        return Record(bytes: bytes, start: carryStart, end: carryStart + Int64(length))
    }
}
