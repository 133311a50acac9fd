import Foundation
import StreamUp
import Testing

/// ``UploadConfiguration/validate()`` on request header fields: the ones streamup frames or
/// manages itself, and values with control characters, are refused naming the field.
@Suite struct UploadHeaderTests {
    private func validate(_ name: String, _ value: String) throws {
        var configuration = UploadConfiguration(url: URL(string: "http://127.0.0.1/")!)
        configuration.headers = [.init(name: name, value: value)]
        try configuration.validate()
    }

    /// Framing and hop-by-hop fields, in any case, are refused with the reason.
    @Test(arguments: [
        (
            "Content-Length", "5",
            "header Content-Length cannot be set: streamup sets it (a segment's complete body) or sends the body chunked (--single-request)"
        ),
        (
            "transfer-encoding", "identity",
            "header transfer-encoding cannot be set: streamup frames the body itself (Content-Length, or chunked with --single-request)"
        ),
        ("Connection", "close", "header Connection cannot be set: the connection is managed by streamup's HTTP client"),
        ("TE", "trailers", "header TE cannot be set: the connection is managed by streamup's HTTP client"),
        ("Upgrade", "h2c", "header Upgrade cannot be set: a streamed upload cannot switch protocols"),
        ("EXPECT", "100-continue", "header EXPECT cannot be set: streamup sends the body at once, without waiting for 100 Continue"),
    ])
    func managedFieldsAreRefused(name: String, value: String, message: String) {
        let error = #expect(throws: StreamUpError.self) { try validate(name, value) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.description == message)
    }

    /// A value with a line break (CRLF too, which Swift sees as one character), NUL or another
    /// control character is refused naming the field; it used to be dropped without a word.
    @Test(arguments: [
        ("a\r\nb", "a carriage return (CR)"), ("a\nb", "a line feed (LF)"), ("a\rb", "a carriage return (CR)"),
        ("a\u{0}b", "a NUL byte"), ("\u{1B}[31m", "the control character U+001B"), ("a\u{7F}", "the control character U+007F"),
    ])
    func controlCharactersInValuesAreRefused(value: String, what: String) {
        let error = #expect(throws: StreamUpError.self) { try validate("X-Tag", value) }
        #expect(error?.description == "the value of X-Tag contains \(what); header values cannot hold line breaks, NUL or other control characters")
    }

    /// Host, tabs, UTF-8 text and ordinary fields pass.
    @Test func ordinaryFieldsPass() throws {
        try validate("Host", "logs.internal:8080")
        try validate("X-Note", "tab\tinside, ünïcödé")
        try validate("Authorization", "Bearer abc.def")
        #expect(throws: StreamUpError.self) { try validate("Bad Name", "x") }
    }
}
