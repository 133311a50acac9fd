import Foundation
import StreamUpHTTP

/// Builds one NDJSON record (a JSON object on one line, ending in `\n`) field by field, in the
/// order the fields are added, without going through `JSONEncoder` for the common scalar case.
///
/// Thread safety: a value type; never shared.
package struct JSONLine: Sendable {
    private var text: [UInt8] = [UInt8(ascii: "{")]
    private var empty = true

    package init() {}

    private mutating func key(_ name: String) {
        if !empty { text.append(UInt8(ascii: ",")) }
        empty = false
        JSONString.append(name, to: &text)
        text.append(UInt8(ascii: ":"))
    }

    /// Adds a string field.
    package mutating func add(_ name: String, _ value: String) {
        key(name)
        JSONString.append(value, to: &text)
    }

    /// Adds an integer field.
    package mutating func add(_ name: String, _ value: Int) {
        key(name)
        text += String(value).utf8
    }

    /// Adds a number field with `decimals` digits after the point.
    package mutating func add(_ name: String, _ value: Double, decimals: Int) {
        key(name)
        text += (value.isFinite ? String(format: "%.\(decimals)f", value) : "null").utf8
    }

    /// Adds a boolean field.
    package mutating func add(_ name: String, _ value: Bool) {
        key(name)
        text += (value ? "true" : "false").utf8
    }

    /// The finished line, with its trailing newline, as UTF-8 bytes.
    package var bytes: [UInt8] { text + [UInt8(ascii: "}"), UInt8(ascii: "\n")] }
}
