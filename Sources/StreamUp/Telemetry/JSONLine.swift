import Foundation
import StreamUpHTTP

/// Builds one NDJSON record (a JSON object on one line, ending in `\n`) field by field, in the
/// order the fields are added, without going through `JSONEncoder` for the common scalar case.
///
/// Thread safety: a value type; never shared.
public struct JSONLine: Sendable {
    private var text: [UInt8] = [UInt8(ascii: "{")]
    private var empty = true

    public init() {}

    private mutating func key(_ name: String) {
        if !empty { text.append(UInt8(ascii: ",")) }
        empty = false
        JSONString.append(name, to: &text)
        text.append(UInt8(ascii: ":"))
    }

    /// Adds a string field.
    public mutating func add(_ name: String, _ value: String) {
        key(name)
        JSONString.append(value, to: &text)
    }

    /// Adds an integer field.
    public mutating func add(_ name: String, _ value: Int) {
        key(name)
        text += String(value).utf8
    }

    /// Adds a number field with `decimals` digits after the point.
    public mutating func add(_ name: String, _ value: Double, decimals: Int) {
        key(name)
        text += (value.isFinite ? String(format: "%.\(decimals)f", value) : "null").utf8
    }

    /// Adds a boolean field.
    public mutating func add(_ name: String, _ value: Bool) {
        key(name)
        text += (value ? "true" : "false").utf8
    }

    /// The finished line, with its trailing newline, as UTF-8 bytes.
    public var bytes: [UInt8] { text + [UInt8(ascii: "}"), UInt8(ascii: "\n")] }
}

/// RFC 3339 timestamps in UTC with milliseconds, e.g. `2026-11-22T08:15:30.123Z`.
///
/// Thread safety: stateless.
enum RFC3339 {
    static func string(from date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(milliseconds % 1000))
    }
}
