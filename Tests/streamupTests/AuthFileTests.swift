import Foundation
import StreamUp
import Testing

@testable import streamup

/// ``TokenFile``, ``HeaderFile`` and ``BasicCredentials``: what a file or a user name may hold,
/// and the one-line errors that say what to do.
@Suite struct AuthFileTests {
    private func file(_ contents: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("streamup-secret-\(UUID().uuidString)").path
        try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// White space around the token (a final newline, CRLF) is dropped; the style decides the field.
    @Test func tokenIsReadWithoutSurroundingWhiteSpace() throws {
        let path = try file("  abc.def-ghi\r\n\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try TokenFile(path: path).header() == .init(name: "Authorization", value: "Bearer abc.def-ghi"))
        #expect(try TokenFile(path: path, style: .splunk).header() == .init(name: "Authorization", value: "Splunk abc.def-ghi"))
        #expect(try TokenFile(path: path, style: .datadog).header() == .init(name: "DD-API-KEY", value: "abc.def-ghi"))
    }

    /// A regular file is read again each time: a rotated token is seen by the next call.
    @Test func tokenFileIsReadAgainForEachRequest() throws {
        let path = try file("first\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let provider = try TokenFile(path: path).headerProvider()
        #expect(try provider() == [.init(name: "Authorization", value: "Bearer first")])
        try Data("second\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(try provider() == [.init(name: "Authorization", value: "Bearer second")])
    }

    /// Files that hold no usable token fail with one line naming the file and what to do.
    @Test(arguments: [
        ("", "the token file PATH is empty: write the token into it"),
        (" \n\n", "the token file PATH is empty: write the token into it"),
        ("one\ntwo\n", "the token file PATH holds more than one line: it must hold only the token, on one line"),
        ("to\u{1B}ken", "the token in PATH contains a control character: it must hold only the token"),
    ])
    func badTokenFileIsOneLine(contents: String, message: String) throws {
        let path = try file(contents)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let error = #expect(throws: StreamUpError.self) { try TokenFile(path: path) }
        #expect(error?.description == message.replacingOccurrences(of: "PATH", with: path))
    }

    /// A missing file, a directory, a file that is not text, or a large one (a log file given by
    /// mistake) fail at once.
    @Test func unreadableTokenFileIsOneLine() throws {
        let missing = "/nonexistent/streamup-token"
        #expect(throws: StreamUpError.self) { try TokenFile(path: missing) }
        let error = #expect(throws: StreamUpError.self) { try TokenFile(path: missing) }
        #expect(
            error?.description
                == "cannot read the token file /nonexistent/streamup-token: No such file or directory; check the path and that streamup may read it")
        let directory = #expect(throws: StreamUpError.self) { try TokenFile(path: "/tmp") }
        #expect(directory?.description == "the token file /tmp is a directory: give the path of the file itself")
        let big = try file(String(repeating: "x", count: 70_000))
        defer { try? FileManager.default.removeItem(atPath: big) }
        let large = #expect(throws: StreamUpError.self) { try TokenFile(path: big) }
        #expect(large?.description == "the token file \(big) holds more than 64 KiB: it should hold only the secret; check the path")
    }

    /// A header file: one field per line, blank lines and # comments skipped, CRLF fine.
    @Test func headerFileHoldsOneFieldPerLine() throws {
        let path = try file("# ingest credentials\nDD-API-KEY: abc123\r\n\n  X-Scope-OrgID: tenant-1  \n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try HeaderFile(path: path).headers() == [.init(name: "DD-API-KEY", value: "abc123"), .init(name: "X-Scope-OrgID", value: "tenant-1")])
    }

    /// A bad line is named by its number, never shown (it may be a secret); an empty file and a
    /// field streamup must set itself are refused.
    @Test(arguments: [
        ("X-Ok: 1\nsecret-without-colon\n", "line 2 of the header file PATH is not 'Name: value' (its contents are not shown: they may be secret)"),
        (
            "Content-Length: 5\n",
            "line 1 of the header file PATH: header Content-Length cannot be set: streamup sets it (a segment's complete body) or sends the body chunked (--single-request)"
        ),
        ("Bad Name: x\n", "line 1 of the header file PATH: 'Bad Name' is not a valid header name"),
        ("# nothing\n\n", "the header file PATH holds no header field: write one 'Name: value' per line"),
    ])
    func badHeaderFileIsOneLine(contents: String, message: String) throws {
        let path = try file(contents)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let error = #expect(throws: StreamUpError.self) { try HeaderFile(path: path) }
        #expect(error?.description == message.replacingOccurrences(of: "PATH", with: path))
        #expect(error?.description.contains("secret-without-colon") == false)
    }

    /// Basic credentials are `user:password` in base64 (UTF-8); a colon in the user name or a
    /// line break anywhere is refused (RFC 7617).
    @Test func basicCredentialsEncodeUserAndPassword() throws {
        #expect(try BasicCredentials(user: "Aladdin", password: "open sesame").header.value == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
        #expect(
            try BasicCredentials(user: "jörg", password: "pässword:with:colons").header.value
                == "Basic " + Data("jörg:pässword:with:colons".utf8).base64EncodedString())
        #expect(throws: StreamUpError.self) { try BasicCredentials(user: "a:b", password: "c") }
        #expect(throws: StreamUpError.self) { try BasicCredentials(user: "a", password: "line\nbreak") }
    }

    /// Token header styles as the command line writes them.
    @Test func tokenHeaderStylesParse() {
        #expect(TokenHeaderStyle(parsing: "Authorization: Splunk") == .splunk)
        #expect(TokenHeaderStyle(parsing: "DD-API-KEY") == .datadog)
        #expect(TokenHeaderStyle(parsing: " X-API-Key : ") == TokenHeaderStyle(name: "X-API-Key"))
        #expect(TokenHeaderStyle(parsing: "Bad Name") == nil)
        #expect(TokenHeaderStyle(parsing: "Authorization: two words") == nil)
        #expect(TokenHeaderStyle.bearer.description == "Authorization: Bearer")
    }
}
