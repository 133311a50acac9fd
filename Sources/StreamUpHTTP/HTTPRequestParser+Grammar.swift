// The pieces of RFC 9112 grammar the parser needs, as pure functions over one line.
extension HTTPRequestParser {
    /// `method SP request-target SP HTTP-version`.
    static func requestLine(_ line: [UInt8]) throws(HTTPParseError) -> RequestLineParts {
        guard let firstSpace = line.firstIndex(of: ASCII.space),
            let lastSpace = line.lastIndex(of: ASCII.space),
            firstSpace < lastSpace
        else {
            throw HTTPParseError.badRequest("malformed request line")
        }
        let method = line[..<firstSpace]
        let target = line[(firstSpace + 1)..<lastSpace]
        let version = Array(line[(lastSpace + 1)...])
        guard !method.isEmpty, method.allSatisfy(ASCII.isTokenByte) else {
            throw HTTPParseError.badRequest("malformed method")
        }
        guard !target.isEmpty, target.allSatisfy({ $0 > ASCII.space && $0 != 0x7F }) else {
            throw HTTPParseError.badRequest("malformed request target")
        }
        let prefix = Array("HTTP/".utf8)
        guard version.count == 8, Array(version[0..<5]) == prefix, version[6] == UInt8(ascii: "."),
            let major = ASCII.decimalDigit(version[5]), let minor = ASCII.decimalDigit(version[7])
        else {
            throw HTTPParseError.badRequest("malformed HTTP version")
        }
        guard major == 1 else {
            throw HTTPParseError.versionNotSupported("HTTP/\(major).\(minor) is not supported")
        }
        return RequestLineParts(
            method: String(decoding: method, as: UTF8.self),
            target: String(decoding: target, as: UTF8.self),
            major: major, minor: minor)
    }

    /// `field-name ":" OWS field-value OWS`.
    static func field(_ line: [UInt8]) throws(HTTPParseError) -> HTTPField {
        guard let colon = line.firstIndex(of: ASCII.colon), colon > 0 else {
            throw HTTPParseError.badRequest("malformed header field")
        }
        let name = line[..<colon]
        guard name.allSatisfy(ASCII.isTokenByte) else {
            throw HTTPParseError.badRequest("malformed header field name")
        }
        var start = colon + 1
        var end = line.count
        while start < end, line[start] == ASCII.space || line[start] == ASCII.tab { start += 1 }
        while end > start, line[end - 1] == ASCII.space || line[end - 1] == ASCII.tab { end -= 1 }
        let value = line[start..<end]
        guard !value.contains(0), !value.contains(ASCII.carriageReturn) else {
            throw HTTPParseError.badRequest("invalid character in header field value")
        }
        return HTTPField(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self))
    }

    /// `chunk-size [ BWS chunk-ext ]`: hexadecimal, no sign, no prefix, must fit in `Int`.
    static func chunkSize(_ line: [UInt8]) throws(HTTPParseError) -> Int {
        var value = 0
        var index = 0
        while index < line.count, let digit = ASCII.hexValue(line[index]) {
            guard value <= (Int.max - digit) >> 4 else {
                throw HTTPParseError.badRequest("chunk size overflows")
            }
            value = value << 4 | digit
            index += 1
        }
        guard index > 0 else {
            throw HTTPParseError.badRequest("invalid chunk size")
        }
        while index < line.count, line[index] == ASCII.space || line[index] == ASCII.tab { index += 1 }
        guard index == line.count else {
            guard line[index] == ASCII.semicolon else {
                throw HTTPParseError.badRequest("invalid chunk size")
            }
            let controls = line[index...].contains { ($0 < ASCII.space && $0 != ASCII.tab) || $0 == 0x7F }
            guard !controls else {
                throw HTTPParseError.badRequest("invalid chunk extension")
            }
            return value
        }
        return value
    }
}

/// The three parts of a request line; kept apart from the parser's state so the grammar
/// functions stay pure.
///
/// Thread safety: a value type that is never shared.
package struct RequestLineParts: Hashable, Sendable {
    package var method: String
    package var target: String
    package var major: Int
    package var minor: Int
}
