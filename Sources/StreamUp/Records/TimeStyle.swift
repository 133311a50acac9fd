/// How a record writes the time its line was read.
///
/// Thread safety: a value type.
enum TimeStyle: Sendable, Equatable {
    /// `"2026-11-22T08:15:30.123Z"`: RFC 3339 UTC with milliseconds, a JSON string.
    case rfc3339
    /// `"1763799330123000000"`: Unix nanoseconds as a JSON string (Loki, OTLP's int64 fields).
    case unixNanoseconds
    /// `1763799330.123`: Unix seconds with milliseconds, a JSON number (Splunk, Fluent Bit).
    case epochSeconds
    /// `1763799330`: whole Unix seconds, a JSON number (a ClickHouse `DateTime`).
    case unixSeconds

    /// Whether the value is a JSON string (its quotes are part of the record's literal bytes).
    var isQuoted: Bool {
        switch self {
        case .rfc3339, .unixNanoseconds: true
        case .epochSeconds, .unixSeconds: false
        }
    }
}
