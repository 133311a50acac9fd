import Testing

@testable import StreamUpHTTP

/// The sink's framing rules (see `SinkFramingTests`) on the parser alone, byte arrays in,
/// statuses out.
@Suite struct TransferCodingParserTests {
    @Test(arguments: [
        ("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: identity, chunked\r\n\r\n", 501),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400),
        ("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n", 400),
    ])
    func unsupportedFramingIsRejected(text: String, status: Int) {
        #expect(ParserDriver.parseWhole(text).error?.status == status)
    }

    /// Plain `chunked`, in any letter case, is still accepted.
    @Test func chunkedAloneIsAccepted() {
        let outcome = ParserDriver.parseWhole("POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
        #expect(outcome.error == nil)
    }
}
