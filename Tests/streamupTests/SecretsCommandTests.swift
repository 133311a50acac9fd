import Foundation
import StreamUpTestSupport
import Testing

/// `-v` through the built binary never prints a secret: credential header fields keep only
/// their scheme word, URLs lose their user information and secret query values; the server
/// still gets the real values.
@Suite(.serialized, .timeLimit(.minutes(2))) struct SecretsCommandTests {
    /// One way to pass a secret. In `arguments` and `url`, URL is the sink's URL (with its
    /// trailing slash), PORT its port and TOKENFILE a file holding `token-secret-t`.
    struct Case: Sendable, CustomTestStringConvertible {
        let arguments: [String]
        var url = "URL"
        /// Texts that must not appear on stderr.
        let secrets: [String]
        /// A line that must appear on stderr instead.
        let shown: String
        /// The field the sink must have received, and its value.
        let received: (name: String, value: String)?
        var testDescription: String { shown }
    }

    static let cases: [Case] = [
        Case(
            arguments: ["-u", "alice:pw-basic-1"], secrets: ["pw-basic-1", base64("alice:pw-basic-1")],
            shown: "> Authorization: Basic <redacted>", received: ("Authorization", "Basic " + base64("alice:pw-basic-1"))),
        Case(
            arguments: ["--bearer-token-file", "TOKENFILE"], secrets: ["token-secret-t"],
            shown: "> Authorization: Bearer <redacted>", received: ("Authorization", "Bearer token-secret-t")),
        Case(
            arguments: ["--token-file", "TOKENFILE", "--token-header", "Authorization: Splunk"], secrets: ["token-secret-t"],
            shown: "> Authorization: Splunk <redacted>", received: ("Authorization", "Splunk token-secret-t")),
        Case(
            arguments: ["--token-file", "TOKENFILE", "--token-header", "DD-API-KEY"], secrets: ["token-secret-t"],
            shown: "> DD-API-KEY: <redacted>", received: ("DD-API-KEY", "token-secret-t")),
        Case(
            arguments: ["-H", "Proxy-Authorization: Basic proxy-secret-2"], secrets: ["proxy-secret-2"],
            shown: "> Proxy-Authorization: Basic <redacted>", received: nil),
        Case(
            arguments: ["-H", "Cookie: session=cookie-secret-3"], secrets: ["cookie-secret-3"],
            shown: "> Cookie: <redacted>", received: ("Cookie", "session=cookie-secret-3")),
        Case(
            arguments: ["-H", "X-API-Key: x-secret-4"], secrets: ["x-secret-4"],
            shown: "> X-API-Key: <redacted>", received: ("X-API-Key", "x-secret-4")),
        Case(
            arguments: ["-H", "Api-Key: api-secret-5"], secrets: ["api-secret-5"],
            shown: "> Api-Key: <redacted>", received: ("Api-Key", "api-secret-5")),
        Case(
            arguments: ["-H", "X-Splunk-Token: splunk-secret-6"], secrets: ["splunk-secret-6"],
            shown: "> X-Splunk-Token: <redacted>", received: ("X-Splunk-Token", "splunk-secret-6")),
        Case(
            arguments: [], url: "http://bob:url-secret-7@127.0.0.1:PORT/", secrets: ["url-secret-7", base64("bob:url-secret-7")],
            shown: "> POST http://<redacted>@127.0.0.1:PORT/", received: ("Authorization", "Basic " + base64("bob:url-secret-7"))),
        Case(
            arguments: [], url: "URLingest?api_key=query-secret-8&tenant=a", secrets: ["query-secret-8"],
            shown: "> POST http://127.0.0.1:PORT/ingest?api_key=<redacted>&tenant=a", received: nil),
    ]

    private static func base64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }

    /// Each kind of secret, sent in both delivery modes with `-v`: stderr shows the redacted
    /// line and none of the secret; the server got the secret itself. (URL passwords were
    /// printed in full, and so was every header field.)
    @Test(arguments: cases, [[], ["--single-request"]])
    func verboseOutputHidesTheSecret(_ secret: Case, mode: [String]) async throws {
        let scratch = try TemporaryDirectory()
        let token = scratch.file("token")
        try Data("token-secret-t\n".utf8).write(to: URL(fileURLWithPath: token))
        try await withSink { sink, _ in
            func filled(_ text: String) -> String {
                text.replacingOccurrences(of: "URL", with: sink.url.absoluteString).replacingOccurrences(of: "PORT", with: "\(sink.port)")
                    .replacingOccurrences(of: "TOKENFILE", with: token)
            }
            let child = try StreamupProcess(["-v"] + mode + secret.arguments.map(filled) + [filled(secret.url)])
            child.write("a line\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let lines = child.stderr.split(separator: "\n").map(String.init)
            #expect(lines.contains(filled(secret.shown)), "stderr: \(child.stderr)")
            for text in secret.secrets {
                #expect(!child.stderr.contains(text), "stderr: \(child.stderr)")
            }
            if let (name, value) = secret.received {
                #expect(sink.requests.last?.headers.first(named: name) == value)
            }
        }
    }

    /// A usage error that quotes the URL does not quote its password.
    @Test func usageErrorHidesTheURLPassword() async throws {
        let child = try StreamupProcess(["http://u:err-secret@127.0.0.1:99999/"])
        child.closeStdin()
        #expect(await child.waitForExit() == 64)
        #expect(child.stderr == "streamup: 'http://<redacted>@127.0.0.1:99999/': port 99999 is out of range (1-65535)\n")
    }

    /// A header that holds `${NAME}` as text (single quotes keep it from the shell) gets one
    /// line saying so, naming the field, never its value: the receiver would get the text.
    @Test func aHeaderHoldingAnUnexpandedNameIsSaid() async throws {
        try await withSink { sink, _ in
            let child = try StreamupProcess(["-H", "Authorization: Bearer ${TOKEN}", sink.url.absoluteString])
            child.write("a line\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(child.stderr.contains("streamup: the header Authorization holds the text ${…} as it is"), "stderr: \(child.stderr)")
        }
    }
}
