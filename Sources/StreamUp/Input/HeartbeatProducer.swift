import Foundation

/// Writes one NDJSON heartbeat record per interval: `ts`, `seq`, `host`, `pid`, `uptime_s`,
/// `skipped`, then any extra fields.
///
/// Ticks fall at start + k × interval on the given clock, so they do not drift. A beat is
/// written only if the whole record fits in the buffer now; when the link is stalled, beats
/// are skipped instead of queued, and the next record that goes out says how many were
/// skipped (`skipped`), so memory stays flat however long the stall.
///
/// The producer ends after `count` beats, or when ``HeartbeatStop/stop(final:)`` is called:
/// then it writes the final record (waiting for space, since it must arrive) and returns.
///
/// With a `LineFormatting` (`--format`), each beat's line is formatted into its record(s) by
/// the producer itself, in its task, before it is written (the way stdin's lines are formatted
/// on the thread that reads them): a beat and its formatted form are one write.
///
/// Thread safety: immutable; `produce` runs in one task. The stop handle may be used from anywhere.
package struct HeartbeatProducer<C: Clock>: Producer where C.Duration == Duration {
    /// Time between beats.
    package let interval: Duration
    /// Stop after this many beats (nil: until stopped or cancelled).
    package let count: Int?
    /// Extra fields added to every record, in order.
    package let fields: [(name: String, value: String)]
    /// Ends the beats early with a final record.
    package let stopHandle: HeartbeatStop
    /// How each beat's line becomes records (nil: the NDJSON line is the record).
    package let formatting: LineFormatting?
    private let clock: C

    /// Creates a heartbeat on `clock` (use `ContinuousClock()` outside tests).
    package init(
        every interval: Duration, count: Int? = nil, fields: [(name: String, value: String)] = [],
        stop: HeartbeatStop = HeartbeatStop(), formatting: LineFormatting? = nil, clock: C
    ) {
        precondition(interval > .zero, "a heartbeat interval must be positive")
        self.interval = interval
        self.count = count
        self.fields = fields
        self.stopHandle = stop
        self.formatting = formatting
        self.clock = clock
    }

    package func produce(into writer: StreamWriter) async throws {
        let start = clock.now
        let records = HeartbeatRecord(fields: fields)
        var lines = formatting?.lineRecords()
        var position: Int64 = 0
        var skipped = 0
        var sent = 0  // `seq` numbers the records that went out, so it has no gaps
        func record(_ extra: [(name: String, value: JSONValue)] = []) -> [UInt8] {
            let line = records.bytes(seq: sent + 1, skipped: skipped, extra: extra)
            guard lines != nil else { return line }
            defer { position += Int64(line.count) }
            let formatted = line.withUnsafeBytes { lines!.take($0, from: position, readAt: Date()) }
            return formatted.flatMap(\.bytes)
        }

        var tick = 0
        while count.map({ tick < $0 }) ?? true {
            if tick > 0 {
                let deadline = start.advanced(by: interval * tick)
                if let final = try await stopHandle.wait(until: deadline, on: clock) {
                    try await writer.write(record(final))
                    return
                }
            }
            tick += 1
            if try record().withUnsafeBytes({ try writer.writeIfSpace($0) }) {
                sent += 1
                skipped = 0
            } else {
                skipped += 1
            }
        }
        if let final = stopHandle.finalFieldsIfStopped() {
            try await writer.write(record(final))
        }
    }
}

extension HeartbeatProducer where C == ContinuousClock {
    /// Creates a heartbeat on the continuous clock.
    package init(
        every interval: Duration, count: Int? = nil, fields: [(name: String, value: String)] = [], stop: HeartbeatStop = HeartbeatStop(),
        formatting: LineFormatting? = nil
    ) {
        self.init(every: interval, count: count, fields: fields, stop: stop, formatting: formatting, clock: ContinuousClock())
    }
}
