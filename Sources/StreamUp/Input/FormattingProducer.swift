import Foundation

/// Runs another producer and turns each line it writes into a record (``RecordFormatter``): for
/// producers that write lines but know nothing of formats, such as a heartbeat (stdin formats
/// its lines on its own reading thread: ``FileDescriptorProducer``).
///
/// The inner producer writes into a small live `ReplayBuffer` of its own (64 KiB); a thread reads it,
/// cuts lines (`LineRecords`) and writes the records into the upload's writer, waiting while
/// that is full, so backpressure reaches the inner producer. A line still open when the inner
/// producer ends becomes a record; one still open when the upload is cancelled is dropped.
///
/// With a ``MultilineRule`` (`package` init), lines join into multiline records first; a
/// record held while no input comes goes out when its timeout passes (the loop waits for input
/// at most until then).
///
/// With a ``RecordFilter``, each message goes through it first: a dropped one writes nothing.
///
/// Thread safety: immutable; `produce` runs the inner producer in a task and the formatting
/// loop on a thread of its own.
package struct FormattingProducer<Inner: Producer>: Producer {
    package let inner: Inner
    /// How each line becomes a record; a line whose record would be longer than its
    /// ``RecordFormatter/maxRecordBytes`` is cut into records that fit.
    package let formatter: RecordFormatter
    /// How lines join into records (nil: a record per line).
    let multiline: MultilineRule?
    /// How container log lines are taken apart (nil: lines are the messages).
    let parse: ContainerLogFormat?
    /// The formatter of a stream's records, with `--parse` (nil: ``formatter``).
    let streamFormatter: (@Sendable (String) -> RecordFormatter?)?
    /// What leaves out or changes messages (nil: none).
    let filter: RecordFilter?

    /// - Parameters:
    ///   - inner: the producer whose lines become records.
    ///   - formatter: how each line becomes a record.
    package init(_ inner: Inner, formatter: RecordFormatter) {
        self.init(inner, formatter: formatter, multiline: nil)
    }

    /// - Parameters:
    ///   - inner: the producer whose lines become records.
    ///   - formatter: how each record becomes bytes (a ``RecordFormat/raw`` one keeps them as
    ///     they are).
    ///   - multiline: how lines join into records.
    ///   - parse: how container log lines are taken apart.
    ///   - streamFormatter: the formatter of a stream's records (`stdout`, `stderr`).
    ///   - filter: what leaves out or changes messages.
    package init(
        _ inner: Inner, formatter: RecordFormatter, multiline: MultilineRule?, parse: ContainerLogFormat? = nil,
        streamFormatter: (@Sendable (String) -> RecordFormatter?)? = nil, filter: RecordFilter? = nil
    ) {
        self.inner = inner
        self.formatter = formatter
        self.multiline = multiline
        self.parse = parse
        self.streamFormatter = streamFormatter
        self.filter = filter
    }

    package func produce(into writer: StreamWriter) async throws {
        let buffer = ReplayBuffer.live(capacity: 64 * 1024)
        let innerWriter = StreamWriter(buffer: buffer)
        let innerTask = innerWriter.start(inner)
        defer { innerTask.cancel() }
        let formatter = self.formatter
        let multiline = multiline
        let parse = parse
        let streamFormatter = streamFormatter
        let filter = filter
        try await withTaskCancellationHandler {
            try await writer.runBlocking { blocking in
                var lines = LineRecords(
                    formatter: formatter, multiline: multiline, parse: parse, streamFormatter: streamFormatter, filter: filter)
                var chunk = [UInt8](repeating: 0, count: 64 * 1024)
                var position: Int64 = 0
                let clock = ContinuousClock()
                let origin = clock.now
                while true {
                    // A multiline record held: wait for input only until it is due.
                    while let deadline = lines.deadline {
                        let left = deadline - (clock.now - origin)
                        let seconds = Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
                        if left > .zero && buffer.waitForLiveInput(until: Date(timeIntervalSinceNow: seconds)) { break }
                        for record in lines.expire(at: clock.now - origin, readAt: Date()) { try blocking.write(record.bytes, mark: nil) }
                    }
                    guard case .bytes(let count) = try chunk.withUnsafeMutableBytes({ try buffer.readLive(into: $0, blocking: true) }) else { break }
                    let records = chunk.withUnsafeBytes {
                        lines.take(UnsafeRawBufferPointer(rebasing: $0[..<count]), from: position, readAt: Date(), now: clock.now - origin)
                    }
                    position += Int64(count)
                    for record in records { try blocking.write(record.bytes, mark: nil) }
                }
                for last in lines.flush(readAt: Date()) { try blocking.write(last.bytes, mark: nil) }
            }
        } onCancel: {
            buffer.failWriting(StreamUpError(.cancelled, "the upload was cancelled"))
        }
    }
}
