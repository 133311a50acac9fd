import Foundation
import StreamUp

/// Turns the lines a `LineReader` writes (whole lines of one file per write, with the file's
/// verbatim mark) into records (``RecordFormatter``, made per file so each record names its
/// file), each marked with the file range of its line, so positions stay exact.
///
/// The newline added to a vanished file's unterminated last line comes as an unmarked write:
/// the line held for that file becomes its record then.
///
/// With a ``MultilineRule``, each file's lines join into records of their own (`LineRecords`
/// per file); a record is marked with the range of all its lines, so a file's saved position
/// never passes a line of a record not yet sent and acknowledged. ``expire(at:)`` sends the
/// records whose timeout passed. With a ``ContainerLogFormat``, each file's container lines are
/// taken apart, their records made by the formatter of their stream. With a ``RecordFilter``,
/// a message it leaves out still moves its file's position (``BlockingStreamWriter/skip(_:)``),
/// so it is not read again after a restart.
///
/// Thread safety: confined to the tailer's thread.
final class FormattingLineSink: LineSink {
    private let inner: BlockingStreamWriter
    private let maxLine: Int
    private let makeFormatter: (SourceID) -> RecordFormatter?
    private let multiline: MultilineRule?
    private let parse: ContainerLogFormat?
    private let makeStreamFormatter: ((SourceID, String) -> RecordFormatter?)?
    private let filter: RecordFilter?
    private var lines: [SourceID: LineRecords] = [:]
    private var lastSource: SourceID?
    /// The origin of the monotonic times `LineRecords` gets.
    private let origin = ContinuousClock.now

    init(
        _ inner: BlockingStreamWriter, maxLine: Int, multiline: MultilineRule? = nil, parse: ContainerLogFormat? = nil,
        makeStreamFormatter: ((SourceID, String) -> RecordFormatter?)? = nil, filter: RecordFilter? = nil,
        makeFormatter: @escaping (SourceID) -> RecordFormatter?
    ) {
        self.filter = filter
        self.inner = inner
        self.maxLine = maxLine
        self.multiline = multiline
        self.parse = parse
        self.makeStreamFormatter = makeStreamFormatter
        self.makeFormatter = makeFormatter
    }

    /// The records of a new source's lines.
    private func newLines(_ source: SourceID) -> LineRecords {
        let streamFormatter = makeStreamFormatter.map { make in { (stream: String) in make(source, stream) } }
        return LineRecords(
            formatter: makeFormatter(source), maxLine: maxLine, multiline: multiline, parse: parse, streamFormatter: streamFormatter, filter: filter)
    }

    var deadline: ContinuousClock.Instant? {
        guard multiline != nil else { return nil }
        return lines.values.compactMap(\.deadline).min().map { origin + $0 }
    }

    func expire(at now: ContinuousClock.Instant) throws {
        guard multiline != nil else { return }
        for (source, var held) in lines where held.deadline.map({ origin + $0 <= now }) ?? false {
            let records = held.expire(at: now - origin, readAt: Date())
            lines[source] = held
            try write(records, of: source)
        }
        // Files no longer read (rotated away, truncated) leave nothing behind.
        lines = lines.filter { $0.value.isHolding || $0.key == lastSource }
    }

    private func write(_ records: [LineRecords.Record], of source: SourceID) throws {
        for record in records {
            let mark = SourceMark(source: source, start: record.start, end: record.end)
            if record.bytes.isEmpty {
                inner.skip(mark)
            } else {
                try inner.write(record.bytes, mark: mark)
            }
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer, mark: SourceMark?) throws {
        guard let mark else {
            guard let source = lastSource, var held = lines[source] else { return }
            let records = held.flush(readAt: Date())
            lines[source] = held
            return try write(records, of: source)
        }
        lastSource = mark.source
        var fileLines = lines[mark.source] ?? newLines(mark.source)
        let records = fileLines.take(bytes, from: mark.start, readAt: Date(), now: ContinuousClock.now - origin)
        lines[mark.source] = fileLines
        try write(records, of: mark.source)
    }
}
