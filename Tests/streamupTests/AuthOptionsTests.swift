import StreamUp
import Testing

@testable import streamup

/// The credential, form and TLS options as the parser records them (a pure function: no file
/// is read while parsing), and where the token's field comes from.
@Suite struct AuthOptionsTests {
    private func upload(_ arguments: [String]) throws -> UploadOptions {
        guard case .upload(let options) = try CommandLineParser.parse(arguments + ["http://h/"]) else {
            Issue.record("not an upload command")
            return UploadOptions()
        }
        return options
    }

    /// `-H @FILE` is a file to read later, not a field; `-u` keeps what was given.
    @Test func credentialOptionsAreRecorded() throws {
        let options = try upload(["-H", "A: 1", "-H", "@/run/h1", "-H", "@/run/h2", "-u", "alice"])
        #expect(options.headers == [.init(name: "A", value: "1")])
        #expect(options.auth.headerFiles == ["/run/h1", "/run/h2"])
        #expect(options.auth.user == "alice")
        #expect(throws: UsageError("-H @FILE: the file name is empty")) { try upload(["-H", "@"]) }
    }

    /// The token's field: --bearer-token-file is always Bearer; --token-file takes
    /// --token-header, else the preset's default (which a preset sets after parsing), else Bearer.
    @Test func tokenFieldComesFromTheOptionThenThePreset() throws {
        var options = try upload(["--token-file", "/t"])
        #expect(options.auth.tokenStyle == .bearer)
        options.auth.defaultTokenHeader = .splunk
        #expect(options.auth.tokenStyle == .splunk)
        options = try upload(["--token-file", "/t", "--token-header", "DD-API-KEY"])
        options.auth.defaultTokenHeader = .splunk
        #expect(options.auth.tokenStyle == .datadog)
        options = try upload(["--bearer-token-file", "/t"])
        options.auth.defaultTokenHeader = .splunk
        #expect(options.auth.tokenStyle == .bearer)
        #expect(throws: UsageError("--token-header cannot go with --bearer-token-file (always Authorization: Bearer); use --token-file")) {
            try upload(["--bearer-token-file", "/t", "--token-header", "X-Key"])
        }
        #expect(throws: UsageError("--token-file: a token file is already given with --bearer-token-file")) {
            try upload(["--bearer-token-file", "/t", "--token-file", "/u"])
        }
    }

    /// `--multipart FIELD[=FILENAME]` and `--form NAME=VALUE` (a value may hold `=`).
    @Test func formOptionsAreRecorded() throws {
        let options = try upload(["--multipart", "upload=app.log", "--form", "a=b=c", "--form", "empty="])
        #expect(options.multipart.field == "upload" && options.multipart.filename == "app.log")
        #expect(options.multipart.textFields == [.init(name: "a", value: "b=c"), .init(name: "empty", value: "")])
        #expect(try upload(["--multipart", "file"]).multipart.filename == nil)
    }

    /// `--help` lists every new option, and says how to trust a CA.
    @Test func helpListsTheOptions() throws {
        guard case .help(let text) = try CommandLineParser.parse(["--help"]) else {
            Issue.record("no help")
            return
        }
        for option in [
            "-H, --header 'NAME: VALUE'|@FILE", "-u, --user USER[:PASSWORD]", "--bearer-token-file FILE", "--token-file FILE",
            "--token-header 'NAME[: SCHEME]'", "--multipart FIELD[=FILENAME]", "--form NAME=VALUE", "--cacert, --capath FILE",
            "--cert, --key FILE", "-k, --insecure", "trust the CA certificates in FILE", "STREAMUP_PASSWORD",
        ] {
            #expect(text.contains(option), "help lacks \(option)")
        }
    }
}
