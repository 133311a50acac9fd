import Foundation

/// Builds one NDJSON record (a JSON object on one line, ending in `\n`) field by field, in the
/// order the fields are added, without going through `JSONEncoder` for the common scalar case.
///
/// Thread safety: a value type; never shared.
package struct JSONLine: Sendable {
    private var text = "{"
    private var empty = true

    package init() {}

    private mutating func key(_ name: String) {
        if !empty { text += "," }
        empty = false
        Self.appendQuoted(name, to: &text)
        text += ":"
    }

    /// Adds a string field.
    package mutating func add(_ name: String, _ value: String) {
        key(name)
        Self.appendQuoted(value, to: &text)
    }

    /// Adds an integer field.
    package mutating func add(_ name: String, _ value: Int) {
        key(name)
        text += String(value)
    }

    /// Adds a number field with `decimals` digits after the point.
    package mutating func add(_ name: String, _ value: Double, decimals: Int) {
        key(name)
        text += value.isFinite ? String(format: "%.\(decimals)f", value) : "null"
    }

    /// Adds a boolean field.
    package mutating func add(_ name: String, _ value: Bool) {
        key(name)
        text += value ? "true" : "false"
    }

    /// The finished line, with its trailing newline, as UTF-8 bytes.
    package var bytes: [UInt8] { Array((text + "}\n").utf8) }

    /// Appends `string` as a JSON string literal, escaping what RFC 8259 requires.
    static func appendQuoted(_ string: String, to text: inout String) {
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case _ where scalar.value < 0x20:
                text += String(format: "\\u%04x", scalar.value)
            default:
                text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
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
