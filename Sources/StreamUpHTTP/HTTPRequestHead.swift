/// A parsed request line and header section, with the framing and connection semantics the
/// parser derived from them.
///
/// Thread safety: a value type that is never shared.
package struct HTTPRequestHead: Hashable, Sendable {
    /// How the body is delimited.
    package enum Framing: Hashable, Sendable {
        /// Neither `Content-Length` nor `Transfer-Encoding`: the body is empty.
        case none
        /// `Content-Length: n`.
        case length(Int)
        /// `Transfer-Encoding: chunked` (the only transfer coding the sink accepts).
        case chunked
    }

    package var method: String
    package var target: String
    package var majorVersion: Int
    package var minorVersion: Int
    package var headers: [HTTPField]
    package var framing: Framing
    /// True for HTTP/1.1 unless the client sent `Connection: close`. HTTP/1.0 connections are
    /// always closed after one request (the sink does not implement 1.0 keep-alive).
    package var keepAlive: Bool
    /// True when the client sent `Expect: 100-continue`.
    package var expectsContinue: Bool

    package var version: String { "HTTP/\(majorVersion).\(minorVersion)" }

    /// True when a body follows the head (chunked, or a non-zero length).
    package var hasBody: Bool {
        switch framing {
        case .none: false
        case .length(let count): count > 0
        case .chunked: true
        }
    }

    package init(
        method: String, target: String, majorVersion: Int, minorVersion: Int, headers: [HTTPField],
        framing: Framing, keepAlive: Bool, expectsContinue: Bool
    ) {
        self.method = method
        self.target = target
        self.majorVersion = majorVersion
        self.minorVersion = minorVersion
        self.headers = headers
        self.framing = framing
        self.keepAlive = keepAlive
        self.expectsContinue = expectsContinue
    }
}

extension HTTPRequestHead {
    /// Builds the head from a parsed request line and header fields, deciding the body framing
    /// (RFC 9112 §6.3) and the connection semantics.
    ///
    /// - Throws: 400 when `Transfer-Encoding` and `Content-Length` are both present, when an
    ///   HTTP/1.0 request carries `Transfer-Encoding` (RFC 9112 §6.1: faulty framing), when the
    ///   final transfer coding is not `chunked` (or `chunked` appears twice), or when
    ///   `Content-Length` is not one non-negative decimal number (identical repeats are allowed);
    ///   501 when a coding other than `chunked` is applied too (`gzip, chunked`): the sink
    ///   decodes none, and storing the bytes still encoded would pass them off as the body
    ///   (RFC 9112 §6.1: 501 for a transfer coding the server does not understand).
    init(requestLine: RequestLineParts, fields: [HTTPField]) throws(HTTPParseError) {
        let transferEncodings = fields.values(named: "transfer-encoding")
        let contentLengths = fields.values(named: "content-length")
        let framing: Framing
        if !transferEncodings.isEmpty {
            guard requestLine.minor >= 1 else {
                throw HTTPParseError.badRequest("Transfer-Encoding in an HTTP/1.0 request")
            }
            guard contentLengths.isEmpty else {
                throw HTTPParseError.badRequest("both Transfer-Encoding and Content-Length")
            }
            let codings = HTTPRequestHead.tokens(transferEncodings)
            guard codings.last == "chunked", codings.filter({ $0 == "chunked" }).count == 1 else {
                throw HTTPParseError.badRequest("unsupported Transfer-Encoding")
            }
            if let other = codings.first(where: { $0 != "chunked" }) {
                throw HTTPParseError.notImplemented("transfer coding '\(other)' is not implemented (only chunked)")
            }
            framing = .chunked
        } else if !contentLengths.isEmpty {
            framing = .length(try HTTPRequestHead.contentLength(contentLengths))
        } else {
            framing = .none
        }
        let connection = HTTPRequestHead.tokens(fields.values(named: "connection"))
        let isHTTP11 = requestLine.major == 1 && requestLine.minor >= 1
        self.init(
            method: requestLine.method,
            target: requestLine.target,
            majorVersion: requestLine.major,
            minorVersion: requestLine.minor,
            headers: fields,
            framing: framing,
            keepAlive: isHTTP11 && !connection.contains("close"),
            expectsContinue: fields.first(named: "expect")?.lowercased() == "100-continue")
    }

    /// Comma-separated list elements across all values, trimmed, lower-cased, empties dropped.
    private static func tokens(_ values: [String]) -> [String] {
        values.flatMap { $0.split(separator: ",") }
            .map { $0.trimmingWhitespace().lowercased() }
            .filter { !$0.isEmpty }
    }

    private static func contentLength(_ values: [String]) throws(HTTPParseError) -> Int {
        let elements = values.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
            .map { $0.trimmingWhitespace() }
        guard let first = elements.first, elements.allSatisfy({ $0 == first }),
            !first.isEmpty, first.utf8.count <= 18,
            first.utf8.allSatisfy({ ASCII.decimalDigit($0) != nil }),
            let value = Int(first)
        else {
            throw HTTPParseError.badRequest("invalid Content-Length")
        }
        return value
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    package func trimmingWhitespace() -> String {
        let isWhitespace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isWhitespace($0) }),
            let end = lastIndex(where: { !isWhitespace($0) })
        else { return "" }
        return String(self[start...end])
    }
}
