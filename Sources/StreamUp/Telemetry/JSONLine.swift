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
