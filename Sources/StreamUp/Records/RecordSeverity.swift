/// How severe a record is, where its input says: an OTLP `SeverityNumber` (1–24: TRACE 1,
/// DEBUG 5, INFO 9, WARN 13, ERROR 17, FATAL 21, each with three finer steps above it) and the
/// level's name as the input spells it (`SeverityText`). OTLP records carry it
/// (`severityNumber`, `severityText`); the other shapes keep the input's own field.
///
/// Thread safety: a value type.
package struct RecordSeverity: Sendable, Hashable {
    /// 1 to 24 (`opentelemetry/proto/logs/v1/logs.proto`, `SeverityNumber`).
    package var number: Int
    /// The level as the input names it.
    package var text: String

    package init(number: Int, text: String) {
        precondition((1...24).contains(number), "an OTLP SeverityNumber is 1 to 24")
        self.number = number
        self.text = text
    }

    /// A syslog priority (0 emerg … 7 debug, as journald's `PRIORITY` holds it) as the
    /// OpenTelemetry log data model maps it (its appendix B, "SeverityNumber example mappings"):
    /// debug DEBUG, info INFO, notice INFO2, warning WARN, err ERROR, crit ERROR2, alert
    /// ERROR3, emerg FATAL; its text the name `journalctl -p` takes. nil for anything else.
    package static func syslog(priority: String) -> RecordSeverity? {
        guard let level = Int(priority), (0...7).contains(level) else { return nil }
        let (number, text) = [(21, "emerg"), (19, "alert"), (18, "crit"), (17, "err"), (13, "warning"), (10, "notice"), (9, "info"), (5, "debug")][level]
        return RecordSeverity(number: number, text: text)
    }
}
