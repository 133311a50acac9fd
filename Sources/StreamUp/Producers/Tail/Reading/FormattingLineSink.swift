import Foundation

/// Turns the lines a `LineReader` writes (whole lines of one file per write, with the file's
/// verbatim mark) into records (``RecordFormatter``, made per file so each record names its
/// file), each marked with the file range of its line, so positions stay exact.
///
/// The newline added to a vanished file's unterminated last line comes as an unmarked write:
/// the line held for that file becomes its record then.
///
/// Thread safety: confined to the tailer's thread.
final class FormattingLineSink: LineSink {
    private let inner: BlockingStreamWriter
    private let maxLine: Int
    private let makeFormatter: (SourceID) -> RecordFormatter?
    private var lines: [SourceID: LineRecords] = [:]
    private var lastSource: SourceID?

    init(_ inner: BlockingStreamWriter, maxLine: Int, makeFormatter: @escaping (SourceID) -> RecordFormatter?) {
        self.inner = inner
        self.maxLine = maxLine
        self.makeFormatter = makeFormatter
    }

    func write(_ bytes: UnsafeRawBufferPointer, mark: SourceMark?) throws {
        guard let mark else {
            guard let source = lastSource, var held = lines[source] else { return }
            let records = held.flush(readAt: Date())
            lines[source] = held
            for record in records {
                try inner.write(record.bytes, mark: SourceMark(source: source, start: record.start, end: record.end))
            }
            return
        }
        lastSource = mark.source
        var fileLines = lines[mark.source] ?? LineRecords(formatter: makeFormatter(mark.source), maxLine: maxLine)
        let records = fileLines.take(bytes, from: mark.start, readAt: Date())
        lines[mark.source] = fileLines
        for record in records {
            try inner.write(record.bytes, mark: SourceMark(source: mark.source, start: record.start, end: record.end))
        }
    }
}
