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
///
/// With a ``MultilineRule``, whole lines first go through a `MultilineJoiner`, and each joined
/// record (its lines joined by `\n`) becomes one record (or its pieces, all marked with the
/// whole record's source range); the producer calls ``expire(at:)`` when ``deadline`` passes.
///
/// With a ``ContainerLogFormat`` (`--parse`), each line is taken apart first
/// (`ContainerLogLine`): its pieces (CRI `P`, Docker's without `\n`) are joined until the last
/// one, and the message is what becomes the record (or what the joiner sees), formatted by the
/// formatter of its stream (`streamFormatter`, which adds the stream and the path's fields)
/// with the runtime's time (to the nanosecond; with ``RecordFormatter/sourceTimes``, the
/// runtime's time is the clock ``SourceTimes`` times the record's source offset by, so a record
/// read again after a restart gets the time it had).
///
/// With a ``RecordFilter`` (`--drop`, `--keep`, `--redact`), each whole message (a line, a
/// joined record, a container message) goes through it before it is cut and formatted: a
/// dropped one becomes a record of no bytes that still carries its source range (so a saved
/// position passes it), a redacted one is made from the redacted text. The pieces of a line
/// too long to be held whole are filtered one by one.
/// Pure: bytes in, records out, no I/O; times come from the caller.
///
/// Thread safety: a value type, confined to its producer's thread.
package struct LineRecords {
    /// One record and the source positions of the line it came from.
    package struct Record {
        package var bytes: [UInt8]
        package var start: Int64
        package var end: Int64
    }

    private(set) var formatter: RecordFormatter?
    /// Where lines are cut without a formatter.
    let maxLine: Int
    private var carry: [UInt8] = []
    private var carryStart: Int64 = 0
    /// Pieces cut from lines too long for one record.
    private(set) var cutLines = 0
    /// Joins lines into multiline records; nil: each line is a record.
    private var joiner: MultilineJoiner?
    /// The monotonic time of the read being taken (for the joiner).
    private var now: Duration = .zero
    /// The most bytes of one message (joined pieces, joined lines).
    private let maxMessage: Int
    /// How container log lines are taken apart; nil: each line is a message.
    private let parse: ContainerLogFormat?
    /// The pieces of a container line so far, until its last piece.
    private var partial: (message: [UInt8], start: Int64, meta: RecordMeta)?
    /// Makes the formatter of a stream's records; nil: ``formatter`` for all.
    private let streamFormatter: ((String) -> RecordFormatter?)?
    private var streamFormatters: [String: RecordFormatter] = [:]
    /// The runtime's time of the record being formatted, Unix nanoseconds (nil: the time it
    /// was read).
    private var recordNanoseconds: Int64?
    /// What leaves out or changes messages; nil: all go as they are.
    private let filter: RecordFilter?

    /// - Parameters:
    ///   - maxLine: where lines are cut when there is no formatter.
    ///   - multiline: how lines join into records (nil: a record per line).
    ///   - parse: how container log lines are taken apart (nil: they are the messages).
    ///   - streamFormatter: the formatter of a stream's records (`--parse`; nil: `formatter`).
    ///   - filter: what leaves out or changes messages (nil or empty: none).
    package init(
        formatter: RecordFormatter?, maxLine: Int = 1 << 20, multiline: MultilineRule? = nil, parse: ContainerLogFormat? = nil,
        streamFormatter: ((String) -> RecordFormatter?)? = nil, filter: RecordFilter? = nil
    ) {
        precondition(maxLine > 0, "lines need room")
        self.formatter = formatter
        self.maxLine = maxLine
        maxMessage = formatter?.maxRecordBytes ?? maxLine
        self.parse = parse
        self.streamFormatter = streamFormatter
        self.filter = filter?.isEmpty == false ? filter : nil
        joiner = multiline.map { MultilineJoiner($0, maxBytes: formatter?.maxRecordBytes ?? maxLine) }
    }

    /// Whether a partial line is held.
    package var isHoldingPartialLine: Bool { !carry.isEmpty }

    /// Whether anything is held: a partial line, pieces of a container line, a multiline record.
    package var isHolding: Bool { !carry.isEmpty || partial != nil || joiner?.isHolding == true }

    /// When the multiline record held goes out without more input (``expire(at:)``); nil when
    /// none is held.
    package var deadline: Duration? { joiner?.deadline }

    /// The records completed by `bytes`, read from the source at `position` at `time`, `now`
    /// on a monotonic clock (it matters only with a multiline rule).
    package mutating func take(_ bytes: UnsafeRawBufferPointer, from position: Int64, readAt time: Date, now: Duration = .zero) -> [Record] {
        self.now = now
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
                carryStart = position + Int64(lineStart)
                takeLine(line, terminated: true, into: &records, time: time)
            } else {
                var held = carry
                carry = []
                held.append(contentsOf: line)
                held.withUnsafeBytes { takeLine($0, terminated: true, into: &records, time: time) }
                held.removeAll(keepingCapacity: true)
                carry = held
            }
            lineStart = end + 1
            carryStart = position + Int64(lineStart)
        }
        return records
    }

    /// The held partial line and multiline record as records (the input ended, or its file
    /// was left behind).
    package mutating func flush(readAt time: Date) -> [Record] {
        var records: [Record] = []
        if !carry.isEmpty {
            let held = carry
            carry = []
            held.withUnsafeBytes { takeLine($0, terminated: false, into: &records, time: time) }
        }
        flushHeld(into: &records, time: time)
        return records
    }

    /// The held container pieces and multiline record, as records.
    private mutating func flushHeld(into records: inout [Record], time: Date) {
        if let held = partial {
            partial = nil
            held.message.withUnsafeBytes { message($0, start: held.start, end: carryStart, meta: held.meta, into: &records, time: time) }
        }
        if let joined = joiner?.flush() { emit(joined, into: &records, time: time) }
    }

    /// The multiline record held, if its ``deadline`` has come at `now`.
    package mutating func expire(at now: Duration, readAt time: Date) -> [Record] {
        guard let joined = joiner?.expire(at: now) else { return [] }
        var records: [Record] = []
        emit(joined, into: &records, time: time)
        return records
    }

    /// A whole line (source bytes from `carryStart`, and its `\n` when `terminated`): a record
    /// (or pieces) of its own, or into the multiline record.
    private mutating func takeLine(_ line: UnsafeRawBufferPointer, terminated: Bool, into records: inout [Record], time: Date) {
        guard joiner != nil || parse != nil else { return emit(line, terminated: terminated, into: &records, time: time) }
        let start = carryStart
        let end = start + Int64(line.count) + (terminated ? 1 : 0)
        // A line that is not the runtime's format goes on as it is.
        guard let parse, let entry = ContainerLogLine.parse(line, as: parse) else {
            if let held = partial {
                partial = nil
                held.message.withUnsafeBytes { message($0, start: held.start, end: start, meta: held.meta, into: &records, time: time) }
            }
            message(line, start: start, end: end, meta: RecordMeta(), into: &records, time: time)
            carryStart = end
            return
        }
        var text = entry.message
        var first = start
        var meta = RecordMeta(stream: entry.stream, nanoseconds: entry.nanoseconds)
        if let held = partial {
            partial = nil
            if held.meta.stream == entry.stream {
                text = held.message + entry.message
                first = held.start
                meta = held.meta
            } else {
                held.message.withUnsafeBytes { message($0, start: held.start, end: start, meta: held.meta, into: &records, time: time) }
            }
        }
        carryStart = end
        if entry.partial && text.count < maxMessage {
            partial = (text, first, meta)
            return
        }
        text.withUnsafeBytes { message($0, start: first, end: end, meta: meta, into: &records, time: time) }
    }

    /// A whole message (source bytes `start..<end`): into the multiline record, or a record.
    private mutating func message(
        _ text: UnsafeRawBufferPointer, start: Int64, end: Int64, meta: RecordMeta, into records: inout [Record], time: Date
    ) {
        guard joiner != nil else {
            return emit(MultilineJoiner.Joined(bytes: Array(text), start: start, end: end, lines: 1, meta: meta), into: &records, time: time)
        }
        if let joined = joiner!.add(text, start: start, end: end, at: now, meta: meta) { emit(joined, into: &records, time: time) }
    }

    /// The records of a joined multiline record: one, or pieces that fit, each marked with the
    /// whole record's source range (so a position after it is saved only once all are
    /// acknowledged). Its pieces are timed as if they lay from the record's first source byte on
    /// (``RecordFormatter/sourceTimes``: the first line's offset, and the piece's place), so a
    /// record read again from its first line gets the same times, whenever it is emitted.
    private mutating func emit(_ joined: MultilineJoiner.Joined, into records: inout [Record], time: Date) {
        var pieces: [Record] = []
        let saved = carryStart
        carryStart = joined.start
        // The formatter that wrote the record is kept as it was left, never a copy from before:
        // it holds the last time it wrote, which the next record's time must pass (equal
        // records with equal times are one entry to Loki).
        var base: RecordFormatter??
        if let stream = joined.meta.stream, let streamFormatter {
            base = formatter
            // A stream's records are timed from the same source times as the file's others.
            let times = formatter?.sourceTimes
            formatter =
                streamFormatters[stream]
                ?? streamFormatter(stream).map { made in
                    var made = made
                    made.sourceTimes = made.sourceTimes ?? times
                    return made
                } ?? formatter
        }
        recordNanoseconds = joined.meta.nanoseconds
        joined.bytes.withUnsafeBytes { emit($0, terminated: true, into: &pieces, time: time) }
        if let stream = joined.meta.stream, let base {
            streamFormatters[stream] = formatter
            formatter = base
        }
        recordNanoseconds = nil
        carryStart = saved
        for var piece in pieces {
            piece.start = joined.start
            piece.end = joined.end
            records.append(piece)
        }
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
            // What is held of a multiline record goes first, so records keep the source order.
            flushHeld(into: &records, time: time)
            let piece = Array(carry[..<length])
            carry.removeFirst(length)
            cutLines += 1
            switch piece.withUnsafeBytes({ filter?.apply($0) ?? .unchanged }) {
            case .unchanged: records.append(record(piece, length: length, time: time))
            case .dropped: records.append(skipped(length: length))
            case .replaced(let text): records.append(record(text, length: length, time: time))
            }
        }
    }

    /// The records of a whole message, filtered: none (a record of no bytes for its source
    /// range), or the records of the message or of its redacted text (each piece marked with the
    /// message's whole source range, as its pieces no longer map byte for byte).
    private mutating func emit(_ line: UnsafeRawBufferPointer, terminated: Bool, into records: inout [Record], time: Date) {
        guard let filter else { return cut(line, terminated: terminated, into: &records, time: time) }
        let length = line.count + (terminated ? 1 : 0)
        switch filter.apply(line) {
        case .unchanged:
            cut(line, terminated: terminated, into: &records, time: time)
        case .dropped:
            records.append(skipped(length: length))
        case .replaced(let text):
            let start = carryStart
            var pieces: [Record] = []
            text.withUnsafeBytes { cut($0, terminated: terminated, into: &pieces, time: time) }
            for var piece in pieces {
                piece.start = start
                piece.end = start + Int64(length)
                records.append(piece)
            }
            carryStart = start + Int64(length)
        }
    }

    /// The record of no bytes that stands for `length` source bytes left out.
    private mutating func skipped(length: Int) -> Record {
        defer { carryStart += Int64(length) }
        return Record(bytes: [], start: carryStart, end: carryStart + Int64(length))
    }

    /// The records of a whole line: one, or its pieces; the last one's source range takes in
    /// the `\n` when `terminated`.
    private mutating func cut(_ line: UnsafeRawBufferPointer, terminated: Bool, into records: inout [Record], time: Date) {
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
            formatter!.append(line, readAt: time, runtime: recordNanoseconds, offset: carryStart, to: &bytes)
        } else {
            bytes.reserveCapacity(line.count + 1)
            bytes.append(contentsOf: line)
            bytes.append(0x0A)
        }
        defer { carryStart += Int64(length) }
        return Record(bytes: bytes, start: carryStart, end: carryStart + Int64(length))
    }
}
