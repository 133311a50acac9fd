extension TelemetryEmitter {
    /// Counts a dropped record, and reports the drops since the last report if that was at
    /// least the report interval ago (``TelemetryCounters``).
    func noteDrop(_ cause: DropCause) {
        if let report = counters.drop(cause, now: clock.now) { reportDrops(report) }
    }

    /// Reports the drops not reported yet (at finish).
    func reportRemainingDrops() {
        if let report = counters.remaining() { reportDrops(report) }
    }

    private func reportDrops(_ report: TelemetryCounters.Report) {
        let count = report.drops.values.reduce(0, +)
        let records = count == 1 ? "1 record" : "\(count) records"
        let since = report.first ? "" : " since the last report"
        let pace = report.first ? "; drops are reported at most every \(counters.interval)" : ""
        let causes = report.drops.sorted { $0.key < $1.key }.map { cause, number in
            (report.drops.count > 1 ? "\(number) " : "") + describe(cause)
        }
        onEvent(.notice("telemetry: \(records) dropped\(since), \(report.total) in all: \(causes.joined(separator: "; "))\(pace)"))
    }

    /// Why records were dropped, for a person.
    private func describe(_ cause: DropCause) -> String {
        switch cause {
        case .full: "the telemetry buffer (\(uploader.storageCapacity) bytes) was full"
        case .fullTooLong: "the telemetry buffer (\(uploader.storageCapacity) bytes) was full for longer than \(whenFull.patience)"
        case .busy: "another record held the telemetry buffer while it waited for space"
        case .unwritable: "the record could not be encoded, or was longer than \(maxRecordBytes) bytes"
        case .finished: "the emitter had finished"
        case .gaveUp: "the emitter had given up (\(gaveUpReason ?? "the upload ended"))"
        }
    }
}
