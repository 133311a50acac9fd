import StreamUpHTTP

/// Reads one JSON text (RFC 8259) value by value, for a caller that knows the shape it
/// expects: members of an object one at a time, strings unescaped into UTF-8, numbers as their
/// text, any value passed over. Nothing is built that the caller does not ask for.
///
/// Strings come out as valid UTF-8, whatever the input holds: a `\u` escape of a lone surrogate
/// (`\udcXX`, as `surrogateescape` records carry) and bytes that are not UTF-8 become U+FFFD,
/// one per maximal subpart (`UTF8Validation`), so that a protobuf `string` made of them is one
/// every decoder takes.
///
/// Thread safety: a value type over bytes the caller keeps alive while it reads them.
struct JSONReader {
    /// The text is not the JSON the caller expected.
    ///
    /// Thread safety: a value type.
    struct Malformed: Error {}

    private let bytes: UnsafeRawBufferPointer
    private var index = 0
    /// How deep objects and arrays may nest before the text is refused (no stack runs out).
    private var depthLeft = 64

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// Whether only white space is left.
    mutating func isAtEnd() -> Bool {
        skipSpace()
        return index == bytes.count
    }

    /// The next byte after white space, not taken (nil at the end).
    mutating func peek() -> UInt8? {
        skipSpace()
        return index < bytes.count ? bytes[index] : nil
    }

    /// Reads an object, calling `member` with each key (unescaped) while the reader stands at
    /// that member's value, which `member` must read or pass over.
    mutating func object(_ member: (inout JSONReader, [UInt8]) throws -> Void) throws {
        try enter(UInt8(ascii: "{"))
        if peek() == UInt8(ascii: "}") {
            index += 1
            return leave()
        }
        while true {
            let key = try string()
            try expect(UInt8(ascii: ":"))
            try member(&self, key)
            if peek() == UInt8(ascii: ",") {
                index += 1
                continue
            }
            try expect(UInt8(ascii: "}"))
            return leave()
        }
    }

    /// Reads an array, calling `element` while the reader stands at each element.
    mutating func array(_ element: (inout JSONReader) throws -> Void) throws {
        try enter(UInt8(ascii: "["))
        if peek() == UInt8(ascii: "]") {
            index += 1
            return leave()
        }
        while true {
            try element(&self)
            if peek() == UInt8(ascii: ",") {
                index += 1
                continue
            }
            try expect(UInt8(ascii: "]"))
            return leave()
        }
    }

    /// Reads a string, unescaped, as valid UTF-8.
    mutating func string() throws -> [UInt8] {
        try expect(UInt8(ascii: "\""))
        var output: [UInt8] = []
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return output
            case UInt8(ascii: "\\"):
                index += 1
                try unescape(into: &output)
            case 0x80...:
                let length = UTF8Validation.sequenceLength(bytes, at: index)
                if length == 0 {
                    output += Self.replacement
                    index += UTF8Validation.maximalSubpartLength(bytes, at: index)
                } else {
                    output.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[index..<(index + length)]))
                    index += length
                }
            default:
                output.append(byte)
                index += 1
            }
        }
        throw Malformed()
    }

    /// The text of a number (`-`, digits, `.`, exponent), unchecked beyond its characters.
    mutating func numberText() throws -> String {
        skipSpace()
        let start = index
        while index < bytes.count, Self.isNumberByte(bytes[index]) { index += 1 }
        guard index > start else { throw Malformed() }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    }

    /// Reads `true` or `false`.
    mutating func bool() throws -> Bool {
        if take("true") { return true }
        if take("false") { return false }
        throw Malformed()
    }

    /// Reads `null` if it is next; returns whether it was.
    mutating func null() -> Bool { take("null") }

    /// Passes over the next value, whatever it is.
    mutating func skipValue() throws {
        switch peek() {
        case UInt8(ascii: "{"): try object { reader, _ in try reader.skipValue() }
        case UInt8(ascii: "["): try array { try $0.skipValue() }
        case UInt8(ascii: "\""): _ = try string()
        case UInt8(ascii: "t"), UInt8(ascii: "f"): _ = try bool()
        case UInt8(ascii: "n"): if !null() { throw Malformed() }
        default: _ = try numberText()
        }
    }

    /// `bytes` as valid UTF-8: each ill-formed sequence's maximal subpart as U+FFFD.
    static func validUTF8(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            guard bytes[index] >= 0x80 else {
                output.append(bytes[index])
                index += 1
                continue
            }
            let length = UTF8Validation.sequenceLength(bytes, at: index)
            if length == 0 {
                output += replacement
                index += UTF8Validation.maximalSubpartLength(bytes, at: index)
            } else {
                output.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[index..<(index + length)]))
                index += length
            }
        }
        return output
    }

    // MARK: Pieces

    private static let replacement: [UInt8] = [0xEF, 0xBF, 0xBD]

    private static func isNumberByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: ".")
            || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
    }

    private mutating func skipSpace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    private mutating func expect(_ byte: UInt8) throws {
        guard peek() == byte else { throw Malformed() }
        index += 1
    }

    private mutating func enter(_ byte: UInt8) throws {
        guard depthLeft > 0 else { throw Malformed() }
        try expect(byte)
        depthLeft -= 1
    }

    private mutating func leave() {
        depthLeft += 1
    }

    private mutating func take(_ word: StaticString) -> Bool {
        skipSpace()
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count else { return false }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return false }
        index += count
        return true
    }

    /// Reads the escape after a `\` into `output` (a `\u` pair of surrogates as one character).
    private mutating func unescape(into output: inout [UInt8]) throws {
        guard index < bytes.count else { throw Malformed() }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(byte)
        case UInt8(ascii: "b"): output.append(0x08)
        case UInt8(ascii: "f"): output.append(0x0C)
        case UInt8(ascii: "n"): output.append(0x0A)
        case UInt8(ascii: "r"): output.append(0x0D)
        case UInt8(ascii: "t"): output.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hex4()
            if (0xD800...0xDBFF).contains(scalar), bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") {
                let saved = index
                index += 2
                let low = try hex4()
                if (0xDC00...0xDFFF).contains(low) {
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else {
                    index = saved
                }
            }
            guard let character = Unicode.Scalar(scalar) else {
                output += Self.replacement
                return
            }
            UTF8.encode(character) { output.append($0) }
        default:
            throw Malformed()
        }
    }

    private mutating func hex4() throws -> UInt32 {
        guard bytes.count - index >= 4 else { throw Malformed() }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case 0x30...0x39: digit = byte - 0x30
            case 0x41...0x46: digit = byte - 0x41 + 10
            case 0x61...0x66: digit = byte - 0x61 + 10
            default: throw Malformed()
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}
