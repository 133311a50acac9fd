/// Writes any bytes as one JSON string literal (RFC 8259 §7) of valid Unicode.
///
/// - `"` and `\` are escaped; control characters use the short forms `\b \t \n \f \r` or
///   `\u00XX`; DEL and all other ASCII pass through.
/// - Well-formed UTF-8 passes through unchanged (so U+2028 and U+2029 stay raw, which JSON allows).
/// - Bytes that are not well-formed UTF-8 (a stray continuation byte, an overlong or cut-short
///   sequence, an encoded surrogate such as `ED A0 80`, a lead byte above U+10FFFF or 0xF5–0xFF)
///   are, by ``InvalidUTF8``:
///   - ``InvalidUTF8/replace`` (the default): U+FFFD for each maximal subpart
///     (`UTF8Validation.maximalSubpartLength`), as Swift's `String(decoding:as:)` and the
///     WHATWG decoder do. Every receiver stores that text as it is.
///   - ``InvalidUTF8/surrogateEscape``: `\udcXX` for each byte 0xXX, a lone low surrogate in
///     U+DC80–U+DCFF, Python's "surrogateescape" (PEP 383): lossless, as Python restores the
///     bytes with `s.encode("utf-8", "surrogateescape")`, but not valid Unicode: Loki 3 refuses
///     the whole request, VictoriaLogs stores the escape's text, ClickHouse the surrogate's
///     three bytes (`ED B2/B3 XX`), other decoders U+FFFD.
///
/// One home for JSON escaping: the record formatter (hot: it runs per line), the telemetry
/// line builder and the sink's answers all write strings through it.
///
/// Thread safety: stateless; callable from any thread.
package enum JSONString {
    /// What bytes that are not UTF-8 become (see the type's documentation).
    ///
    /// Thread safety: a value type.
    package enum InvalidUTF8: Sendable {
        /// U+FFFD for each maximal subpart of an ill-formed sequence.
        case replace
        /// `\udcXX` for each byte 0xXX (PEP 383).
        case surrogateEscape
    }

    /// Appends `bytes` as a quoted JSON string.
    package static func append(_ bytes: UnsafeRawBufferPointer, invalidUTF8: InvalidUTF8 = .replace, to output: inout [UInt8]) {
        output.append(0x22)
        appendContent(bytes, invalidUTF8: invalidUTF8, to: &output)
        output.append(0x22)
    }

    /// Appends a Swift string (always valid Unicode) as a quoted JSON string.
    package static func append(_ string: String, to output: inout [UInt8]) {
        var string = string
        string.withUTF8 { append(UnsafeRawBufferPointer($0), to: &output) }
    }

    /// `string` as a quoted JSON string, for text built as a `String`.
    package static func quoted(_ string: String) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(string.utf8.count + 2)
        append(string, to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends the escaped content of the string, without quotes.
    package static func appendContent(_ bytes: UnsafeRawBufferPointer, invalidUTF8: InvalidUTF8 = .replace, to output: inout [UInt8]) {
        var index = 0
        var runStart = 0
        let count = bytes.count
        while index < count {
            let byte = bytes[index]
            if byte >= 0x20 && byte != 0x22 && byte != 0x5C && byte < 0x80 {
                index += 1
                continue
            }
            if byte >= 0x80 {
                let length = UTF8Validation.sequenceLength(bytes, at: index)
                if length > 0 {
                    index += length
                    continue
                }
            }
            if runStart < index { output.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[runStart..<index])) }
            if byte >= 0x80, invalidUTF8 == .replace {
                output.append(contentsOf: replacementCharacter)
                index += UTF8Validation.maximalSubpartLength(bytes, at: index)
                runStart = index
                continue
            }
            appendEscape(for: byte, to: &output)
            index += 1
            runStart = index
        }
        if runStart < count { output.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[runStart..<count])) }
    }

    /// How many of `bytes`, from their start, ``appendContent(_:invalidUTF8:to:)`` writes in at
    /// most `budget` bytes, never ending inside a character, an escape or a replaced sequence:
    /// `bytes.count` when all of it fits. Each byte takes 1 to 6 (`\u001b`, `\udcff`).
    package static func prefixLength(_ bytes: UnsafeRawBufferPointer, within budget: Int, invalidUTF8: InvalidUTF8 = .replace) -> Int {
        var index = 0
        var written = 0
        while index < bytes.count {
            let byte = bytes[index]
            var consumed = 1
            let size: Int
            switch byte {
            case 0x22, 0x5C, 0x08, 0x09, 0x0A, 0x0C, 0x0D: size = 2
            case 0x00..<0x20: size = 6
            case 0x20..<0x80: size = 1
            default:
                let length = UTF8Validation.sequenceLength(bytes, at: index)
                if length > 0 {
                    (consumed, size) = (length, length)
                } else if invalidUTF8 == .replace {
                    (consumed, size) = (UTF8Validation.maximalSubpartLength(bytes, at: index), 3)
                } else {
                    size = 6
                }
            }
            guard written + size <= budget else { return index }
            written += size
            index += consumed
        }
        return index
    }

    /// U+FFFD REPLACEMENT CHARACTER in UTF-8.
    private static let replacementCharacter: [UInt8] = [0xEF, 0xBF, 0xBD]

    /// The escape for one byte that cannot stand for itself (appended byte by byte: no
    /// temporary arrays on this path).
    private static func appendEscape(for byte: UInt8, to output: inout [UInt8]) {
        output.append(0x5C)
        switch byte {
        case 0x22, 0x5C: output.append(byte)
        case 0x08: output.append(UInt8(ascii: "b"))
        case 0x09: output.append(UInt8(ascii: "t"))
        case 0x0A: output.append(UInt8(ascii: "n"))
        case 0x0C: output.append(UInt8(ascii: "f"))
        case 0x0D: output.append(UInt8(ascii: "r"))
        case 0x00..<0x20:
            output.append(UInt8(ascii: "u"))
            output.append(UInt8(ascii: "0"))
            output.append(UInt8(ascii: "0"))
            output.append(hexDigit(byte >> 4))
            output.append(hexDigit(byte & 0xF))
        default:
            // A byte of ill-formed UTF-8: surrogateescape, U+DC00 + byte.
            output.append(UInt8(ascii: "u"))
            output.append(UInt8(ascii: "d"))
            output.append(UInt8(ascii: "c"))
            output.append(hexDigit(byte >> 4))
            output.append(hexDigit(byte & 0xF))
        }
    }

    @inline(__always)
    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? 0x30 + value : 0x61 + value - 10
    }
}
