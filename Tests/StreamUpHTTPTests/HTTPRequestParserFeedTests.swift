import Testing

@testable import StreamUpHTTP

/// `feed`, the loop the benchmark's receivers and the test stub use: whole reads in, heads,
/// body bytes and ends out, in order.
@Suite struct HTTPRequestParserFeedTests {
    private enum Seen: Equatable {
        case head(String)
        case body([UInt8])
        case end([HTTPField])
    }

    /// Feeds `text` in pieces of `piece` bytes; body runs are merged so splits compare equal.
    private static func feed(_ text: String, piece: Int) throws(HTTPParseError) -> [Seen] {
        var parser = HTTPRequestParser(limits: .init(maxHeaderBytes: 4_096, maxChunkLineBytes: 256))
        var seen: [Seen] = []
        let bytes = Array(text.utf8)
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + piece)
            var failure: HTTPParseError?
            bytes[start..<end].withUnsafeBytes { raw in
                do throws(HTTPParseError) {
                    try parser.feed(raw) { head in
                        seen.append(.head("\(head.method) \(head.target)"))
                    } onBody: { body in
                        if case .body(let earlier) = seen.last {
                            seen[seen.count - 1] = .body(earlier + Array(body))
                        } else {
                            seen.append(.body(Array(body)))
                        }
                    } onEnd: { trailers in
                        seen.append(.end(trailers))
                    }
                } catch {
                    failure = error
                }
            }
            if let failure { throw failure }
            start = end
        }
        return seen
    }

    /// Trailers reach `onEnd` and the next pipelined request follows. The benchmark's old
    /// decoder dropped trailers and the stub's ignored them; RFC 9112 §7.1.2 makes the trailer
    /// section part of the message, ended by an empty line.
    @Test func trailersEndTheMessageAndPipelinedRequestsFollow() throws {
        let text =
            "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "3;ext=1\r\nabc\r\n0\r\nDigest: x\r\n\r\n"
            + "POST /b HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"
            + "GET /c HTTP/1.1\r\n\r\n"
        let expected: [Seen] = [
            .head("POST /a"), .body(Array("abc".utf8)), .end([HTTPField(name: "Digest", value: "x")]),
            .head("POST /b"), .body(Array("hi".utf8)), .end([]),
            .head("GET /c"), .end([]),
        ]
        for piece in [1, 2, 7, text.utf8.count] {
            #expect(try Self.feed(text, piece: piece) == expected, "pieces of \(piece)")
        }
    }

    /// The benchmark's old decoder skipped the two bytes after chunk data without looking;
    /// they must be CRLF (RFC 9112 §7.1: `chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF`).
    @Test func bytesOtherThanCRLFAfterChunkDataAreRefused() {
        let text = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n"
        #expect(throws: HTTPParseError.badRequest("missing CRLF after chunk data")) { try Self.feed(text, piece: 64) }
    }

    /// The benchmark's and the stub's old decoders read sizes with Swift's `Int(_:radix:)`,
    /// which takes a sign; `chunk-size = 1*HEXDIG` (RFC 9112 §7.1) and
    /// `Content-Length = 1*DIGIT` (RFC 9110 §8.6) have none.
    @Test func signedSizesAreRefused() {
        let chunked = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n+3\r\nabc\r\n0\r\n\r\n"
        #expect(throws: HTTPParseError.badRequest("invalid chunk size")) { try Self.feed(chunked, piece: 64) }
        let length = "POST / HTTP/1.1\r\nContent-Length: +3\r\n\r\nabc"
        #expect(throws: HTTPParseError.badRequest("invalid Content-Length")) { try Self.feed(length, piece: 64) }
    }

    /// The benchmark's old decoder took `gzip, chunked` as chunked and kept the bytes still
    /// gzipped; a coding the server does not decode is answered 501 (RFC 9112 §6.1).
    @Test func aTransferCodingBeforeChunkedIsNotTakenForChunked() {
        let text = "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
        #expect(throws: HTTPParseError.notImplemented("transfer coding 'gzip' is not implemented (only chunked)")) {
            try Self.feed(text, piece: 64)
        }
    }
}
