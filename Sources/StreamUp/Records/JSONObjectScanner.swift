import StreamUpHTTP

/// Checks that a line is exactly one JSON object (RFC 8259: the grammar of §2–§7, UTF-8 text per
/// §8.1, JSON whitespace around it) and finds its top-level keys, without building any values.
/// A line feed is not taken as whitespace: a line has none, and a record must stay one line.
///
/// Refused: other top-level values, trailing text, raw control characters or ill-formed UTF-8
/// in strings, bad escapes, numbers outside the JSON grammar (`01`, `1.`, `.5`, `+1`), `NaN`,
/// comments, trailing commas, and nesting deeper than ``maximumDepth``. Accepted as the grammar
/// allows: duplicate keys and escapes of lone surrogates (`"\ud800"`).
///
/// The scanner keeps its scratch storage between lines, so scanning allocates nothing once warm.
///
/// Thread safety: a value type; never shared.
struct JSONObjectScanner {
    /// One top-level key: the bytes between its quotes, `bytes[start..<end]`, still escaped.
    struct Key {
        var start: Int
        var end: Int
        var hasEscapes: Bool
    }

    /// Where the object sits in the line.
    struct Object {
        /// The offset of the opening `{`.
        var openBrace: Int
        /// How many members the object has.
        var memberCount: Int
    }

    /// Containers nested deeper than this make the line "not an object" (it is then wrapped).
    static let maximumDepth = 512

    /// The top-level keys of the last object scanned, in order.
    private(set) var keys: [Key] = []
    /// Open containers, innermost last: true for an object, false for an array.
    private var stack: [Bool] = []

    private enum Expect { case value, valueOrArrayEnd, keyOrObjectEnd, key, colon, afterValue }

    /// Scans `bytes`; returns the object's position, or nil when the line is not exactly one
    /// JSON object.
    mutating func scan(_ bytes: UnsafeRawBufferPointer) -> Object? {
        keys.removeAll(keepingCapacity: true)
        stack.removeAll(keepingCapacity: true)
        var index = Self.skipWhitespace(bytes, from: 0)
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return nil }
        let openBrace = index
        stack.append(true)
        index += 1
        var expect = Expect.keyOrObjectEnd
        var members = 0
        while true {
            index = Self.skipWhitespace(bytes, from: index)
            guard index < bytes.count else { return nil }
            let byte = bytes[index]
            switch expect {
            case .keyOrObjectEnd, .key:
                if byte == UInt8(ascii: "}") && expect == .keyOrObjectEnd {
                    stack.removeLast()
                    index += 1
                    expect = .afterValue
                } else if byte == UInt8(ascii: "\"") {
                    guard let string = Self.scanString(bytes, from: index) else { return nil }
                    if stack.count == 1 {
                        keys.append(Key(start: index + 1, end: string.end - 1, hasEscapes: string.hasEscapes))
                        members += 1
                    }
                    index = string.end
                    expect = .colon
                } else {
                    return nil
                }
            case .colon:
                guard byte == UInt8(ascii: ":") else { return nil }
                index += 1
                expect = .value
            case .value, .valueOrArrayEnd:
                if byte == UInt8(ascii: "]") && expect == .valueOrArrayEnd {
                    stack.removeLast()
                    index += 1
                    expect = .afterValue
                    continue
                }
                switch byte {
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    guard stack.count < Self.maximumDepth else { return nil }
                    stack.append(byte == UInt8(ascii: "{"))
                    index += 1
                    expect = byte == UInt8(ascii: "{") ? .keyOrObjectEnd : .valueOrArrayEnd
                    continue
                case UInt8(ascii: "\""):
                    guard let string = Self.scanString(bytes, from: index) else { return nil }
                    index = string.end
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    guard let end = Self.scanNumber(bytes, from: index) else { return nil }
                    index = end
                case UInt8(ascii: "t"):
                    guard let end = Self.scanLiteral("true", bytes, from: index) else { return nil }
                    index = end
                case UInt8(ascii: "f"):
                    guard let end = Self.scanLiteral("false", bytes, from: index) else { return nil }
                    index = end
                case UInt8(ascii: "n"):
                    guard let end = Self.scanLiteral("null", bytes, from: index) else { return nil }
                    index = end
                default:
                    return nil
                }
                expect = .afterValue
            case .afterValue:
                guard let inObject = stack.last else { return nil }
                if byte == UInt8(ascii: ",") {
                    expect = inObject ? .key : .value
                } else if byte == UInt8(ascii: inObject ? "}" : "]") {
                    stack.removeLast()
                } else {
                    return nil
                }
                index += 1
            }
            if expect == .afterValue && stack.isEmpty {
                // The top-level object closed: only whitespace may follow.
                return Self.skipWhitespace(bytes, from: index) == bytes.count
                    ? Object(openBrace: openBrace, memberCount: members) : nil
            }
        }
    }

    /// Whether `key` (from the last scan of `bytes`) names the same string as `name` (UTF-8),
    /// once its escapes are decoded.
    func key(_ key: Key, in bytes: UnsafeRawBufferPointer, equals name: [UInt8]) -> Bool {
        let raw = UnsafeRawBufferPointer(rebasing: bytes[key.start..<key.end])
        guard key.hasEscapes else { return raw.elementsEqual(name) }
        return Self.decode(raw).map { $0 == name } ?? false
    }

    // MARK: - Pieces of the grammar

    @inline(__always)
    private static func skipWhitespace(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var index = start
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0D: index += 1
            default: return index
            }
        }
        return index
    }

    /// Scans the string whose opening quote is at `start`; returns the offset after its closing quote.
    private static func scanString(_ bytes: UnsafeRawBufferPointer, from start: Int) -> (end: Int, hasEscapes: Bool)? {
        var index = start + 1
        var hasEscapes = false
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case 0x22:
                return (index + 1, hasEscapes)
            case 0x5C:
                hasEscapes = true
                guard index + 1 < bytes.count else { return nil }
                switch bytes[index + 1] {
                case 0x22, 0x5C, 0x2F, UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"),
                    UInt8(ascii: "t"):
                    index += 2
                case UInt8(ascii: "u"):
                    guard index + 6 <= bytes.count,
                        (2..<6).allSatisfy({ hexValue(bytes[index + $0]) != nil })
                    else { return nil }
                    index += 6
                default:
                    return nil
                }
            case 0x00..<0x20:
                return nil
            case 0x80...0xFF:
                let length = UTF8Validation.sequenceLength(bytes, at: index)
                guard length > 0 else { return nil }
                index += length
            default:
                index += 1
            }
        }
        return nil
    }

    /// Scans `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`; returns the offset after it.
    private static func scanNumber(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        var index = start
        func digits() -> Int {
            let first = index
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
            return index - first
        }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { return nil }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if digits() == 0 {
            return nil
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return nil }
        }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { return nil }
        }
        return index
    }

    private static func scanLiteral(_ literal: StaticString, _ bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        let count = literal.utf8CodeUnitCount
        guard start + count <= bytes.count else { return nil }
        for offset in 0..<count where bytes[start + offset] != literal.utf8Start[offset] { return nil }
        return start + count
    }

    private static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case 0x30...0x39: UInt32(byte - 0x30)
        case 0x41...0x46: UInt32(byte - 0x41 + 10)
        case 0x61...0x66: UInt32(byte - 0x61 + 10)
        default: nil
        }
    }

    /// Decodes the escapes of a validated string's content into UTF-8; nil when it holds a lone
    /// surrogate (which no configured key can equal).
    private static func decode(_ raw: UnsafeRawBufferPointer) -> [UInt8]? {
        var output: [UInt8] = []
        var index = 0
        func unit(at offset: Int) -> UInt32 {
            (2..<6).reduce(0) { $0 << 4 | hexValue(raw[offset + $1])! }
        }
        while index < raw.count {
            guard raw[index] == 0x5C else {
                output.append(raw[index])
                index += 1
                continue
            }
            let escaped = raw[index + 1]
            index += 2
            switch escaped {
            case UInt8(ascii: "b"): output.append(0x08)
            case UInt8(ascii: "f"): output.append(0x0C)
            case UInt8(ascii: "n"): output.append(0x0A)
            case UInt8(ascii: "r"): output.append(0x0D)
            case UInt8(ascii: "t"): output.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = unit(at: index - 2)
                index += 4
                if (0xD800...0xDBFF).contains(scalar) {
                    guard index + 6 <= raw.count, raw[index] == 0x5C, raw[index + 1] == UInt8(ascii: "u") else { return nil }
                    let low = unit(at: index)
                    guard (0xDC00...0xDFFF).contains(low) else { return nil }
                    scalar = 0x10000 + (scalar - 0xD800) << 10 + (low - 0xDC00)
                    index += 6
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    return nil
                }
                output.append(contentsOf: String(Unicode.Scalar(scalar)!).utf8)
            default:
                output.append(escaped)  // \" \\ \/
            }
        }
        return output
    }
}
