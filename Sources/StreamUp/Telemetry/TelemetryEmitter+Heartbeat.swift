extension TelemetryEmitter {
    /// Adds a heartbeat record to this emitter's stream every `interval`, at once first: `ts`,
    /// `seq`, `host`, `pid`, `uptime_s`, `skipped`, then `fields` (the records of the
    /// library's one heartbeat loop, `HeartbeatProducer`, which `streamup heartbeat` runs too).
    /// A beat that does not fit in the buffer is skipped, and the next record says how many
    /// were (`skipped`). It stops at ``finish(within:)`` or ``cancel()``, when the emitter gives
    /// up, or when this is called again (the new heartbeat replaces it). Beats are not counted
    /// in ``metrics``' records.
    /// - Parameters:
    ///   - interval: time between beats, on the emitter's clock (positive).
    ///   - fields: extra string fields on every beat, in order (e.g. `("job", "nightly")`).
    public func startHeartbeat(every interval: Duration, fields: [(name: String, value: String)] = []) {
        precondition(interval > .zero, "a heartbeat interval must be positive")
        guard stoppedCause == nil else { return }
        let formatting = recordFormatter.map { LineFormatting($0.withLock { $0 }) }
        let beats = HeartbeatProducer(every: interval, fields: fields, formatting: formatting, clock: clock)
        // The first beat is written at once: it starts the upload, as a first record does.
        startRun()
        replaceHeartbeat(
            with: Task { [writer = uploader.bufferWriter] in
                // It ends when cancelled, or when the upload ends (the writer refuses beats then).
                try? await beats.produce(into: writer)
            })
    }
}
