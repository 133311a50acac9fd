/// How each input line becomes a record (a line of the body, ending in `\n`).
///
/// Thread safety: a value type; safe to pass anywhere.
package enum RecordFormat: String, Sendable, CaseIterable {
    /// The line as it is.
    case raw
    /// A JSON object per line: the line as a string field beside time, host, path and extra fields.
    case ndjson
    /// Lines that are JSON objects get the extra fields merged in (their own keys win); other
    /// lines are wrapped as in ``ndjson``.
    case json
}
