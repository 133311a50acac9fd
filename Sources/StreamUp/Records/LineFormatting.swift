/// How a producer's lines become records: the settings of one `LineRecords`, kept by a
/// producer that makes its own on the thread that reads.
///
/// Thread safety: a value type of `Sendable` parts.
package struct LineFormatting: Sendable {
    /// How each line becomes a record; a line whose record would be longer than its
    /// ``RecordFormatter/maxRecordBytes`` is cut into records that fit.
    package var formatter: RecordFormatter
    /// How lines join into records (nil: a record per line).
    package var multiline: MultilineRule?
    /// How container log lines are taken apart (nil: lines are the messages).
    package var parse: ContainerLogFormat?
    /// The formatter of a stream's records, with `--parse` (nil: ``formatter``).
    package var streamFormatter: (@Sendable (String) -> RecordFormatter?)?
    /// What leaves out or changes messages (nil: none).
    package var filter: RecordFilter?

    package init(
        _ formatter: RecordFormatter, multiline: MultilineRule? = nil, parse: ContainerLogFormat? = nil,
        streamFormatter: (@Sendable (String) -> RecordFormatter?)? = nil, filter: RecordFilter? = nil
    ) {
        self.formatter = formatter
        self.multiline = multiline
        self.parse = parse
        self.streamFormatter = streamFormatter
        self.filter = filter
    }

    /// A new cutter of lines into records with these settings.
    func lineRecords() -> LineRecords {
        LineRecords(formatter: formatter, multiline: multiline, parse: parse, streamFormatter: streamFormatter, filter: filter)
    }
}
