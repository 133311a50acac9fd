import Foundation
import StreamUp
import StreamUpTestSupport
import Testing

@testable import streamup

/// The pipelines file of `streamup run` as the parser reads it, without a process: lines and
/// quotes, `${NAME}` wherever it stands, names made of what a pipeline is, the URL every
/// pipeline needs, and every problem named by its line.
@Suite struct PipelineFileTests {
    private func parse(_ text: String, _ environment: [String: String] = [:]) throws -> PipelineFile {
        try PipelineFile.parse(text, environment: environment)
    }

    /// The problems a file is refused with, as `line N: message`.
    private func problems(_ text: String, _ environment: [String: String] = [:]) -> [String] {
        PipelineFile.read(text, environment: environment).problems.map(\.description)
    }

    /// Continued lines, quotes and `--name` make the pipelines; comments and blank lines make
    /// none; a pipeline that is not tail, heartbeat or journal, or a shared state file, is
    /// refused naming its line.
    @Test func theFileParsesLineByLine() throws {
        let text = """
            # comment

            tail --name app '/var/log/app/*.log' \\
              -H "Authorization: Bearer ${TOKEN}" http://h/x
            heartbeat --every 5s http://h/beat
            """
        let file = try parse(text, ["TOKEN": "s e"])
        #expect(file.pipelines.map(\.line) == [3, 5])
        #expect(file.pipelines[0].words == ["tail", "/var/log/app/*.log", "-H", "Authorization: Bearer s e", "http://h/x"])
        // A service's pipeline retries through an outage of any length unless its line says.
        guard case .tail(let tail) = file.pipelines[0].command,
            case .heartbeat(let beat) = try parse("heartbeat --retries 3 http://h").pipelines[0].command
        else {
            Issue.record("not a tail and a heartbeat")
            return
        }
        #expect(tail.upload.delivery.retries == .some(nil))
        #expect(beat.upload.delivery.retries == .some(3))
        #expect(problems("cat x") == ["line 1: 'cat' is not tail, heartbeat or journal (stdin has no place in a pipelines file)"])
        #expect(problems("tail a --metrics 0 http://h") == ["line 1: --metrics has no place on a pipeline (--metrics goes on the run command line)"])
        #expect(
            problems("tail --state /s a http://h\ntail --state /s b http://h") == ["line 2: /s is line 1's too: each pipeline needs its own state and spool"])
    }

    /// A pipeline is known by what it is: without `--name`, by its command and what it reads,
    /// so a comment line added above it renames nothing (it was its line number, and a reload
    /// then started a second copy beside the first, which held the state file).
    @Test func aPipelineIsNamedByWhatItIsNotWhereItStands() throws {
        let lines = "tail /var/log/a.log http://h/\njournal --unit nginx.service http://h/\nheartbeat --every 5s http://monitor.example/beat\n"
        let names = try parse(lines).pipelines.map(\.name)
        #expect(names == ["tail /var/log/a.log", "journal nginx.service", "heartbeat monitor.example"])
        #expect(try parse("# a comment\n\n" + lines).pipelines.map(\.name) == names)
        // Two lines with one name need a --name; the same line twice is one pipeline twice.
        #expect(problems("tail /a http://h/\ntail /a http://other/") == ["line 2: the name 'tail /a' is line 1's too: give one of them a --name of its own"])
        #expect(problems("tail /a http://h/\ntail /a http://h/") == ["line 2: the same pipeline as line 1"])
        #expect(try parse("tail /a http://h/\ntail --name b /a http://other/").pipelines.map(\.name) == ["tail /a", "b"])
    }

    /// `${NAME}` is the environment's value wherever it stands, in single quotes too (the
    /// shipped example and `run --help` write the token header that way), put into its word
    /// whole; `$$` writes a `$`; `$1` and a `$` ending a regex stay as written.
    @Test func namesAreExpandedInAnyQuotes() throws {
        let environment = ["TOKEN": "t0k'en x", "HOST": "loki"]
        let file = try parse(
            #"tail --redact '(pw=)\S+' --redact-with '$1***' --drop 'end$' a.log -H 'Authorization: Bearer ${TOKEN}' -H "X-Cost: $$5" http://${HOST}:3100/"#,
            environment)
        #expect(
            file.pipelines[0].words == [
                "tail", "--redact", #"(pw=)\S+"#, "--redact-with", "$1***", "--drop", "end$", "a.log", "-H", "Authorization: Bearer t0k'en x", "-H",
                "X-Cost: $5",
                "http://loki:3100/",
            ])
        #expect(problems("\ntail a -H 'X: ${TOKEN}' http://h", [:]) == ["line 2: ${TOKEN} is not set in the environment"])
        #expect(problems("tail a -H 'X: ${TOKEN}' http://h", ["TOKEN": ""]) == ["line 1: ${TOKEN} is empty in the environment"])
        #expect(problems("tail a -H 'X: ${TOKEN' http://h") == ["line 1: '${' without its '}' (write $$ for a $)"])
        #expect(problems("tail a -H 'X: ${A-B}' http://h") == ["line 1: '${A-B}' is not ${NAME} with NAME of letters, digits and _ (write $$ for a $)"])
    }

    /// An error line never shows a value `${NAME}` put in: the name stands in its place.
    @Test func aSecretIsNeverEchoedInAProblem() {
        let said = problems("tail a.log --segment-bytes ${SIZE} http://h/", ["SIZE": "hunter2-secret"])
        #expect(said.count == 1 && said[0].contains("${SIZE}") && !said[0].contains("hunter2"), "\(said)")
    }

    /// Every pipeline needs an http(s) URL: without one a command streams into a throw-away
    /// local sink, which a service never wants.
    @Test func aPipelineWithoutAnHTTPURLIsRefused() {
        #expect(
            problems("tail a.log\n") == [
                "line 1: no URL: a pipeline needs its receiver's http:// or https:// URL (without one it would stream into a throw-away local sink)"
            ])
        // A word in another scheme is no URL to streamup: tail takes it for a file to follow.
        #expect(problems("tail a.log ftp://h/x").first?.hasPrefix("line 1: no URL") == true)
        #expect(problems("tail a.log https://h/x").isEmpty)
    }

    /// Every bad line is said, each once, in line order (not only the first).
    @Test func everyBadLineIsSaid() {
        let said = problems("tail a.log http://h/\ntail b.log\ncat x\ntail c.log http://h/")
        #expect(said.map { $0.prefix(7) } == ["line 2:", "line 3:"], "\(said)")
    }

    /// `s1` and `./s1` are one state file: two lines naming it so are refused as sharing it.
    @Test func oneStateFileUnderTwoSpellingsIsOneFile() {
        let said = problems("tail --state s1 a.log http://h/\ntail --state ./s1 b.log http://h/")
        #expect(
            said.count == 1 && said[0].hasPrefix("line 2: ") && said[0].hasSuffix("is line 1's too: each pipeline needs its own state and spool"), "\(said)")
    }

    /// The example pipelines file of Examples/Deploy (what the unit and the DaemonSet run)
    /// parses as it is, its token put into the header its single quotes hold.
    @Test func theExamplePipelinesFileParses() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Examples/Deploy/pipelines.conf").path
        let file = try parse(try String(contentsOfFile: path, encoding: .utf8), ["LOKI_TOKEN": "t0ken"])
        #expect(file.pipelines.map(\.name) == ["app", "journal", "beat"])
        #expect(file.pipelines[0].words.contains("Authorization: Bearer t0ken"), "\(file.pipelines[0].words)")
    }

    /// The DaemonSet's pipelines file (its ConfigMap's `pipelines.conf` block) parses too.
    @Test func theDaemonSetPipelinesFileParses() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Examples/Deploy/daemonset.yaml").path
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0.hasSuffix("pipelines.conf: |") })
        let block = lines[(start + 1)...].prefix { $0.hasPrefix("    ") }.map { String($0.dropFirst(4)) }.joined(separator: "\n")
        let file = try parse(block, ["LOKI_TOKEN": "t"])
        #expect(file.pipelines.map(\.words.first) == ["tail"])
        #expect(file.pipelines.first?.words.contains("--parse") == true)
    }

    /// `run --check`: a file whose state directory is missing, whose spool cannot be made, or
    /// whose URL is missing has one line per problem, naming the line; a good file none.
    @Test func checkNamesEachProblemByItsLine() throws {
        let scratch = try TemporaryDirectory()
        let log = scratch.file("a.log")
        try "x\n".write(toFile: log, atomically: false, encoding: .utf8)
        let good = "tail --state \(scratch.file("a.state")) --spool \(scratch.file("spool")) \(log) http://h/\n"
        #expect(PipelineCheck.problems(of: good, environment: [:]).isEmpty)
        let bad = """
            tail --name m --state \(scratch.file("missing/a.state")) \(log) http://h/
            heartbeat --every 1s
            tail --name s --spool \(scratch.file("missing/deeper/spool")) \(log) http://h/
            heartbeat --cacert \(scratch.file("missing.pem")) https://h/
            """
        let said = PipelineCheck.problems(of: bad, environment: [:]).map(\.description)
        #expect(
            said == [
                "line 1: the directory of the state file \(scratch.file("missing/a.state")) does not exist",
                "line 2: no URL: a pipeline needs its receiver's http:// or https:// URL (without one it would stream into a throw-away local sink)",
                "line 3: the directory of the spool \(scratch.file("missing/deeper/spool")) does not exist",
                "line 4: --cacert \(scratch.file("missing.pem")) cannot be read (No such file or directory): give a PEM file of CA certificates that streamup may read",
            ], "\(said)")
    }

    /// A pipeline takes curl's TLS options as any command does.
    @Test func aPipelineTakesTLSFiles() throws {
        let file = try parse("tail --cacert /etc/ca.pem --cert /etc/c.pem --key /etc/k.pem /a.log https://h/")
        guard case .tail(let tail) = file.pipelines[0].command else {
            Issue.record("not a tail")
            return
        }
        #expect(
            tail.upload.tls.configuration
                == UploadConfiguration.TLS(
                    caCertificates: URL(fileURLWithPath: "/etc/ca.pem"), clientCertificate: URL(fileURLWithPath: "/etc/c.pem"),
                    clientKey: URL(fileURLWithPath: "/etc/k.pem")))
    }
}
