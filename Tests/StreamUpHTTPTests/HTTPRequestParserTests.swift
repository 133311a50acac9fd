import StreamUpTestSupport
import Testing

@testable import StreamUpHTTP

/// The parser on byte arrays: framing, limits and malformed input, in every kind of split.
struct HTTPRequestParserTests {
    static let chunkedRequest = Array(
        ("POST /ingest?x=1 HTTP/1.1\r\n"
            + "Host: sink\r\n"
            + "Transfer-Encoding: chunked\r\n"
            + "X-Multi:   spaced value \t\r\n"
            + "\r\n"
            + "5;name=value;flag\r\nhello\r\n"
            + "1\r\n \r\n"
            + "0000000000000000000006 \r\nworld!\r\n"
            + "0\r\n"
            + "Digest: sha-256=abc\r\n"
            + "\r\n").utf8)

    /// A chunked body with extensions and trailers decodes to the same message in any split.
    @Test func chunkedBodyDecodesIdenticallyInEverySplit() throws {
        let whole = ParserDriver.parse(Self.chunkedRequest) { Self.chunkedRequest.count }
        #expect(whole.error == nil)
        let message = try #require(whole.messages.first)
        #expect(whole.messages.count == 1)
        #expect(message.head.method == "POST")
        #expect(message.head.target == "/ingest?x=1")
        #expect(message.head.framing == .chunked)
        #expect(message.head.keepAlive)
        #expect(message.head.headers.first(named: "x-multi") == "spaced value")
        #expect(message.body == Array("hello world!".utf8))
        #expect(message.trailers == [HTTPField(name: "Digest", value: "sha-256=abc")])

        #expect(ParserDriver.parseByteByByte(Self.chunkedRequest) == whole)
        for seed in UInt64(1)...40 {
            #expect(ParserDriver.parseInRandomPieces(Self.chunkedRequest, seed: seed, maxPiece: 17) == whole)
        }
    }

    /// A Content-Length body is delivered exactly, and a request without framing has no body.
    @Test func contentLengthBodyAndBodilessRequestsParse() throws {
        let text = "PUT /a HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello worldGET /b HTTP/1.1\r\n\r\n"
        let whole = ParserDriver.parseWhole(text)
        #expect(whole.error == nil)
        #expect(whole.messages.map(\.head.method) == ["PUT", "GET"])
        #expect(whole.messages.map(\.body) == [Array("hello world".utf8), []])
        #expect(whole.messages.first?.head.framing == .length(11))
        #expect(whole.messages.last?.head.framing == HTTPRequestHead.Framing.none)
        #expect(ParserDriver.parseByteByByte(Array(text.utf8)) == whole)
    }

    /// Pipelined requests of both framings come out in order, with a random binary body.
    @Test func pipelinedRequestsWithBinaryBodiesParseInAnySplit() {
        var random = SeededRandom(seed: 7)
        let payload = random.bytes(5_000)
        var bytes = Array("POST /1 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        for piece in [payload[0..<1], payload[1..<4_000], payload[4_000...]] {
            bytes += Array(String(piece.count, radix: 16).utf8) + [13, 10] + piece + [13, 10]
        }
        bytes += Array("0\r\n\r\nPOST /2 HTTP/1.1\r\ncontent-length: 5000\r\n\r\n".utf8) + payload
        let whole = ParserDriver.parse(bytes) { bytes.count }
        #expect(whole.messages.map(\.body) == [payload, payload])
        #expect(whole.messages.map(\.head.target) == ["/1", "/2"])
        for seed in UInt64(100)...110 {
            #expect(ParserDriver.parseInRandomPieces(bytes, seed: seed, maxPiece: 3_000) == whole)
        }
        #expect(ParserDriver.parseByteByByte(bytes) == whole)
    }

    /// Bare LF line endings and empty lines before the request line are tolerated.
    @Test func bareLineFeedsAndLeadingEmptyLinesAreTolerated() {
        let outcome = ParserDriver.parseWhole("\r\n\nPOST / HTTP/1.1\nTransfer-Encoding: chunked\n\n3\nabc\n0\n\n")
        #expect(outcome.error == nil)
        #expect(outcome.messages.map(\.body) == [Array("abc".utf8)])
    }

    /// Keep-alive follows the version and the Connection header; Expect: 100-continue is noticed.
    @Test func connectionSemanticsFollowVersionAndHeaders() {
        func head(_ text: String) -> HTTPRequestHead? {
            ParserDriver.parseWhole(text).messages.first?.head
        }
        #expect(head("GET / HTTP/1.1\r\n\r\n")?.keepAlive == true)
        #expect(head("GET / HTTP/1.1\r\nConnection: keep-alive, Close\r\n\r\n")?.keepAlive == false)
        #expect(head("GET / HTTP/1.0\r\n\r\n")?.keepAlive == false)
        #expect(head("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")?.keepAlive == false)
        #expect(head("POST / HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 0\r\n\r\n")?.expectsContinue == true)
        #expect(head("POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n")?.expectsContinue == false)
        #expect(head("POST / HTTP/1.1\r\nContent-Length: 7, 7\r\n\r\n1234567")?.framing == .length(7))
    }

    /// A header section past the limit answers 431, also when it arrives byte by byte.
    @Test func oversizedHeaderSectionIsRejectedWith431() {
        let limits = HTTPRequestParser.Limits(maxHeaderBytes: 256, maxChunkLineBytes: 64)
        let text = "GET / HTTP/1.1\r\nX-Big: \(String(repeating: "a", count: 300))\r\n\r\n"
        #expect(ParserDriver.parseWhole(text, limits: limits).error?.status == 431)
        #expect(ParserDriver.parseByteByByte(Array(text.utf8), limits: limits).error?.status == 431)
        // Just under the limit is fine.
        let fits = "GET / HTTP/1.1\r\nX: \(String(repeating: "a", count: 256 - 23))\r\n\r\n"
        #expect(Array(fits.utf8).count == 256)
        #expect(ParserDriver.parseWhole(fits, limits: limits).messages.count == 1)
        let oneOver = "GET / HTTP/1.1\r\nX: \(String(repeating: "a", count: 256 - 22))\r\n\r\n"
        #expect(ParserDriver.parseByteByByte(Array(oneOver.utf8), limits: limits).error?.status == 431)
    }

    /// A trailer section past the limit answers 431.
    @Test func oversizedTrailerSectionIsRejectedWith431() {
        let limits = HTTPRequestParser.Limits(maxHeaderBytes: 256, maxChunkLineBytes: 64)
        let text = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: \(String(repeating: "t", count: 300))\r\n\r\n"
        #expect(ParserDriver.parseWhole(text, limits: limits).error?.status == 431)
    }

    /// A chunk-size line past the limit answers 400 without waiting for its end.
    @Test func overlongChunkSizeLineIsRejectedWith400() {
        let limits = HTTPRequestParser.Limits(maxHeaderBytes: 1_024, maxChunkLineBytes: 64)
        let text = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;\(String(repeating: "e", count: 100))"
        let outcome = ParserDriver.parseByteByByte(Array(text.utf8), limits: limits)
        #expect(outcome.error == .badRequest("chunk-size line exceeds 64 bytes"))
    }

    /// Malformed chunk framing answers 400.
    @Test(arguments: [
        "xyz\r\n", "-1\r\n", "0x10\r\n", "\r\n", ";ext\r\n", "+5\r\n", "5 5\r\n",
        "8000000000000000\r\n", "FFFFFFFFFFFFFFFFF\r\n", "5\r\nhelloX\r\n", "5\r\nhello\r\r\n",
        "5\r\nhello\r\n0\r\nbad trailer\r\n\r\n", "5;ext\u{1}\r\nhello\r\n",
    ])
    func malformedChunkFramingIsRejectedWith400(chunks: String) {
        let text = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks
        let outcome = ParserDriver.parseWhole(text)
        #expect(outcome.error?.status == 400)
        #expect(ParserDriver.parseByteByByte(Array(text.utf8)).error?.status == 400)
    }

    /// Malformed or ambiguous heads answer 400 (or 505 for another major version).
    @Test(arguments: [
        ("GARBAGE\r\n\r\n", 400),
        ("GET /\r\n\r\n", 400),
        ("GET / HTTP/1.1 extra\r\n\r\n", 400),
        ("G(T / HTTP/1.1\r\n\r\n", 400),
        ("GET / HTTP/1.12\r\n\r\n", 400),
        ("GET / HTTQ/1.1\r\n\r\n", 400),
        ("GET / HTTP/2.0\r\n\r\n", 505),
        ("GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nName : value\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\n: value\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nContent-Length: -5\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nContent-Length: 0x5\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nContent-Length:\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400),
    ])
    func malformedHeadsAreRejected(text: String, status: Int) {
        #expect(ParserDriver.parseWhole(text).error?.status == status)
    }

    /// A huge declared length allocates nothing: bytes are handed on as they arrive.
    @Test func declaredLengthsAreNeverTrusted() {
        let text = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n7FFFFFFFFFFFFFFF\r\nabc"
        let outcome = ParserDriver.parseWhole(text)
        #expect(outcome.error == nil)
        #expect(outcome.unfinishedBody == Array("abc".utf8))
        let length = ParserDriver.parseWhole("POST / HTTP/1.1\r\nContent-Length: 999999999999999999\r\n\r\nxy")
        #expect(length.unfinishedBody == Array("xy".utf8))
    }

    /// After an error the parser stays failed.
    @Test func parserStaysFailedAfterAnError() {
        var parser = HTTPRequestParser(limits: ParserDriver.defaultLimits)
        let bad = Array("BAD\r\n".utf8)
        let good = Array("GET / HTTP/1.1\r\n\r\n".utf8)
        #expect(throws: HTTPParseError.self) { try bad.withUnsafeBytes { _ = try parser.parse($0) } }
        #expect(throws: HTTPParseError.self) { try good.withUnsafeBytes { _ = try parser.parse($0) } }
    }

    /// The parser reports whether it is between messages.
    @Test func parserKnowsWhenItIsBetweenMessages() throws {
        var parser = HTTPRequestParser(limits: ParserDriver.defaultLimits)
        #expect(parser.isAtMessageStart)
        let partial = Array("GE".utf8)
        _ = try partial.withUnsafeBytes { try parser.parse($0) }
        #expect(!parser.isAtMessageStart)
    }

    /// Random garbage and randomly damaged requests never crash the parser.
    @Test func arbitraryInputNeverCrashesTheParser() {
        var random = SeededRandom(seed: 99)
        for round in 0..<400 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = random.bytes(Int.random(in: 0...300, using: &random))
            } else {
                bytes = Self.chunkedRequest
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    let index = Int.random(in: 0..<bytes.count, using: &random)
                    bytes[index] = UInt8.random(in: 0...255, using: &random)
                }
            }
            let limits = HTTPRequestParser.Limits(maxHeaderBytes: 128, maxChunkLineBytes: 16)
            _ = ParserDriver.parseInRandomPieces(bytes, seed: UInt64(round), maxPiece: 9, limits: limits)
        }
    }
}
