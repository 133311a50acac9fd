import Foundation
import StreamUp
import StreamUpTail
import Testing

@testable import streamup

/// The command line as a pure function: argv in, a command or a usage error out.
@Suite struct CommandLineParserTests {
    private func upload(_ arguments: [String]) throws -> UploadOptions {
        guard case .upload(let options) = try CommandLineParser.parse(arguments) else {
            Issue.record("not an upload command")
            return UploadOptions()
        }
        return options
    }

    /// Options in both spellings, repeated headers, and the URL land where they belong.
    @Test func uploadOptionsAreParsed() throws {
        let options = try upload(["-H", "A: 1", "--header=B: two words", "-X", "put", "--buffer-size", "1MiB", "-v", "http://h/x"])
        #expect(options.headers.map(\.name) == ["A", "B"])
        #expect(options.headers.last?.value == "two words")
        #expect(options.method == "PUT")
        #expect(options.bufferSize == 1 << 20)
        #expect(options.verbose)
        #expect(options.url == "http://h/x")
    }

    /// `--drop`, `--keep` and `--redact` keep their order; `--redact-with` gives the template of
    /// the `--redact` before it; a pattern that does not compile is a usage error naming it.
    @Test func filtersAreParsedInOrder() throws {
        let options = try upload(["--keep", "a", "--redact", "(k=)\\w+", "--redact-with", "$1-", "--drop", "b", "--redact", "secret", "http://h/x"])
        #expect(options.records.filter?.rules == [.keep("a"), .redact("(k=)\\w+", template: "$1-"), .drop("b"), .redact("secret", template: nil)])
        #expect(throws: UsageError("--drop '(' is not a regular expression (ICU syntax)")) { try CommandLineParser.parse(["--drop", "(", "http://h"]) }
        #expect(throws: UsageError("--drop, --keep and --redact act on records of lines: they cannot go with --records none")) {
            try CommandLineParser.parse(["--drop", "x", "--records", "none", "http://h"])
        }
    }

    /// `--redact` as people write it: the whole value is the pattern, so what it matches goes
    /// as `***`, the `=` and the secret after it included (the text after an `=` used to be
    /// taken for a template: `[^ ]*=hunter2` left the machine). An empty pattern, and a
    /// `--redact-with` with no `--redact` of its own before it, are usage errors.
    @Test func redactTakesTheWholeValueAsItsPattern() throws {
        let filter = try #require(try upload(["--redact", "password=[^ ]*", "http://h/x"]).records.filter)
        let masked = Array("login user=ann password=hunter2 ok".utf8).withUnsafeBytes { filter.apply($0) }
        #expect(masked == .replaced(Array("login user=ann *** ok".utf8)))
        #expect(throws: UsageError("--redact: the pattern is empty (it would match every record); give the text to match")) {
            try CommandLineParser.parse(["--redact", "", "http://h"])
        }
        let misplaced = "--redact-with '$1***' must follow the --redact whose matches it replaces: --redact 'PATTERN' --redact-with 'TEMPLATE'"
        #expect(throws: UsageError(misplaced)) { try CommandLineParser.parse(["--redact-with", "$1***", "--redact", "(p=)\\S+", "http://h"]) }
        #expect(throws: UsageError(misplaced)) { try CommandLineParser.parse(["--redact", "(p=)\\S+", "--drop", "x", "--redact-with", "$1***", "http://h"]) }
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["--redact", "(p=)\\S+", "--redact-with", "$1", "--redact-with", "$1***", "http://h"]) }
    }

    /// No URL means the embedded sink.
    @Test func missingURLMeansTheLocalSink() throws {
        #expect(try upload([]).url == nil)
    }

    /// Usage errors name the offending argument.
    @Test func usageErrorsNameTheOffendingArgument() {
        #expect(throws: UsageError("unknown option '--nope' (see --help)")) { try CommandLineParser.parse(["--nope"]) }
        #expect(throws: UsageError("option '-H' needs a value ('NAME: VALUE'|@FILE)")) { try CommandLineParser.parse(["-H"]) }
        #expect(throws: UsageError("-H: 'no colon' is not 'Name: value'")) { try CommandLineParser.parse(["-H", "no colon", "http://h"]) }
        // A field whose name looks secret is echoed without its value.
        #expect(throws: UsageError("-H: 'X-Api-Key <redacted>' is not 'Name: value'")) {
            try CommandLineParser.parse(["-H", "X-Api-Key s3cret", "http://h"])
        }
        #expect(
            throws: UsageError(
                "-H: 'Authorization: Bearer <redacted>': the value of Authorization contains a line feed (LF); header values cannot hold line breaks, NUL or other control characters"
            )
        ) {
            try CommandLineParser.parse(["-H", "Authorization: Bearer s3cret\nX: y", "http://h"])
        }
        #expect(throws: UsageError("--method: 'GET' is not supported; a streamed body goes with POST, PUT or PATCH")) {
            try CommandLineParser.parse(["-X", "GET", "http://h"])
        }
        #expect(throws: UsageError("expected URLs, got 'input.txt', which is not an http or https URL")) {
            try CommandLineParser.parse(["http://a", "input.txt"])
        }
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["heartbeat", "--every", "soon"]) }
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["sink", "--port", "70000"]) }
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["tail"]) }
    }

    /// `-H` refuses the fields streamup frames itself and values with control characters, naming
    /// the header, with the control characters written out.
    @Test func framingHeadersAndControlCharactersAreUsageErrors() throws {
        #expect(
            throws: UsageError(
                "-H: 'Content-Length: 5': header Content-Length cannot be set: streamup sets it (a segment's complete body) or sends the body chunked (--single-request)"
            )
        ) {
            try CommandLineParser.parse(["-H", "Content-Length: 5", "http://h"])
        }
        #expect(
            throws: UsageError(
                "-H: 'X-A: a\\r\\nb': the value of X-A contains a carriage return (CR); header values cannot hold line breaks, NUL or other control characters")
        ) {
            try CommandLineParser.parse(["-H", "X-A: a\r\nb", "http://h"])
        }
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["tail", "-H", "Transfer-Encoding: identity", "f", "http://h"]) }
        #expect(try upload(["-H", "Host: logs.internal", "http://h"]).headers.first?.value == "logs.internal")
    }

    /// `-o FILE` names where a 2xx answer's body goes; `-o -` is stdout, as in curl.
    @Test func outputFileIsParsed() throws {
        #expect(try upload(["-o", "answer.json", "http://h"]).outputFile == "answer.json")
        #expect(try upload(["--output=-", "http://h"]).outputFile == nil)
        #expect(try upload(["http://h"]).outputFile == nil)
    }

    /// Acknowledged segments are the default; the delivery options reach the library's
    /// options; `--single-request` refuses segment options.
    @Test func deliveryOptionsAreParsed() throws {
        let options = try upload([
            "--resumable", "--spool", "/var/spool/s", "--spool-size", "2GiB", "--retry-statuses", "429,502-504",
            "--records", "none", "--max-record", "64k", "--dead-letter", "/tmp/dead", "http://h",
        ])
        let library = options.delivery.libraryOptions
        #expect(library.delivery == .resumableUpload)
        #expect(library.storage == .spool(directory: URL(fileURLWithPath: "/var/spool/s"), capacity: 2 << 30))
        #expect(library.retry.retryableStatuses == [429, 502, 503, 504])
        #expect(library.records == .rawBytes && library.maxRecordBytes == 64 << 10)
        #expect(library.deadLetterDirectory?.path == "/tmp/dead")
        let defaults = try upload(["http://h"])
        #expect(!defaults.delivery.singleRequest && defaults.delivery.libraryOptions.records == .lines)
        // The default rides out an outage of any length; --retries and --retry-max-time bound it.
        #expect(defaults.delivery.libraryOptions.retry.maxRetries == nil && defaults.delivery.libraryOptions.retry.maxRetryTime == nil)
        #expect(try upload(["--retries", "3", "http://h"]).delivery.libraryOptions.retry.maxRetries == 3)
        let timed = try upload(["--retry-max-time", "90s", "http://h"]).delivery.libraryOptions.retry
        #expect(timed.maxRetries == nil && timed.maxRetryTime == .seconds(90))
        #expect(defaults.delivery.libraryOptions.segmentDuration == .seconds(1))
        #expect(try upload(["--single-request", "http://h"]).delivery.singleRequest)
        let mixed = #expect(throws: UsageError.self) { try CommandLineParser.parse(["--single-request", "--retries", "3", "http://h"]) }
        #expect(mixed?.message.contains("--retries") == true)
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["--records", "words", "http://h"]) }
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["--retry-statuses", "200", "http://h"]) }
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["--retry-statuses", "503-500", "http://h"]) }
    }

    /// Durations and sizes are read the way the help says.
    @Test func durationsAndSizesParse() throws {
        #expect(try parseDuration("500ms", option: "x") == .milliseconds(500))
        #expect(try parseDuration("0.2s", option: "x") == .milliseconds(200))
        #expect(try parseDuration("10s", option: "x") == .seconds(10))
        #expect(try parseDuration("5m", option: "x") == .seconds(300))
        #expect(try parseByteSize("64k", option: "x") == 65536)
        #expect(try parseByteSize("2MiB", option: "x") == 2 << 20)
        #expect(throws: UsageError.self) { try parseByteSize("-1", option: "x") }
        // As the help's "Sizes" paragraph says: a bare number is bytes, kb is 1000-based, a
        // bare duration is seconds.
        #expect(try parseByteSize("65536", option: "x") == 65_536)
        #expect(try parseByteSize("64KiB", option: "x") == 65_536)
        #expect(try parseByteSize("64kb", option: "x") == 64_000)
        #expect(try parseByteSize("1gb", option: "x") == 1_000_000_000)
        #expect(try parseDuration("10", option: "x") == .seconds(10))
        #expect(try parseDuration("24h", option: "x") == .seconds(86_400))
    }

    /// The heartbeat command takes its command after `--`.
    @Test func heartbeatTakesACommandAfterDoubleDash() throws {
        guard
            case .heartbeat(let options) = try CommandLineParser.parse(
                ["heartbeat", "--every", "1s", "--count", "3", "--field", "k=v", "http://h", "--", "sh", "-c", "exit 3"])
        else {
            Issue.record("not a heartbeat command")
            return
        }
        #expect(options.every == .seconds(1) && options.count == 3)
        #expect(options.fields.map(\.name) == ["k"])
        #expect(options.upload.url == "http://h")
        #expect(options.command == ["sh", "-c", "exit 3"])
        #expect(options.upload.contentType == "application/x-ndjson")
        // A monitor that is down for a while does not end the beats.
        #expect(options.upload.libraryOptions.retry.maxRetries == nil)
    }

    /// `--help` anywhere before `--` asks for help, for each command.
    @Test func helpIsRecognisedForEachCommand() throws {
        for arguments in [["--help"], ["-h", "http://x"], ["sink", "--help"], ["tail", "-h"], ["heartbeat", "--help"]] {
            guard case .help(let text) = try CommandLineParser.parse(arguments) else {
                Issue.record("\(arguments) did not ask for help")
                continue
            }
            #expect(text.hasPrefix("usage: streamup"))
        }
    }

    /// `--version` (or `-V`) before `--` asks for the version, for each command, whatever
    /// else is there; every command's option list names it. After `--` it belongs to the
    /// heartbeat's command.
    @Test func versionIsRecognisedForEachCommand() throws {
        for arguments in [
            ["--version"], ["-V", "http://x"], ["sink", "--version"], ["tail", "*.log", "-V"], ["heartbeat", "--version"],
            ["tail", "--version", "--no-such-option"],
        ] {
            #expect(try CommandLineParser.parse(arguments) == .version, "\(arguments)")
        }
        guard case .heartbeat(let options) = try CommandLineParser.parse(["heartbeat", "--", "git", "--version"]) else {
            Issue.record("not a heartbeat")
            return
        }
        #expect(options.command == ["git", "--version"])
        for help in [UploadOptions.help, TailOptions.help, HeartbeatOptions.help, SinkOptions.help] {
            #expect(help.contains("-V, --version"))
        }
    }

    /// Every command's help says how sizes and durations are written and what its exit
    /// statuses mean; tail's and heartbeat's read from files and a timer, so their option
    /// texts say nothing of stdin (only the usage error "a closed stdin" names it).
    @Test func helpTextsDocumentUnitsExitStatusesAndTheirOwnInput() throws {
        for help in [UploadOptions.help, TailOptions.help, HeartbeatOptions.help, SinkOptions.help] {
            #expect(help.contains("kb, mb, gb (1000-based)") && help.contains("a bare number is seconds"))
            #expect(help.lowercased().contains("exit status:"))
            #expect(help.contains("74 "), "74 is documented")
        }
        for help in [TailOptions.help, HeartbeatOptions.help] {
            let mentions = help.components(separatedBy: "stdin").count - 1
            #expect(mentions == 1 && help.contains("a closed stdin"), "\(help)")
        }
        #expect(HeartbeatOptions.help.contains("With -- COMMAND: the command's status"))
    }

    /// The sink's fault options fill in the faults it injects.
    @Test func sinkFaultOptionsAreParsed() throws {
        guard
            case .sink(let options) = try CommandLineParser.parse(
                ["sink", "--port", "0", "--fail-next", "2", "--fail-status", "503", "--drop-after", "1000", "--drop-every", "--read-rate", "5000"])
        else {
            Issue.record("not a sink command")
            return
        }
        #expect(options.port == 0)
        #expect(options.faults.failNextRequests == 2 && options.faults.failStatus == 503)
        #expect(options.faults.dropAfterBytes == 1000 && options.faults.dropRepeatedly)
        #expect(options.faults.readBytesPerSecond == 5000)
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["sink", "--fail-status", "200"]) }
    }

    /// `tail` takes many patterns and the one argument with an http(s) scheme as the URL,
    /// wherever it stands; its own options fill the tailer's.
    @Test func tailTakesPatternsAndTheURLAnywhere() throws {
        guard
            case .tail(let options) = try CommandLineParser.parse(
                [
                    "tail", "/var/log/a.log", "HTTPS://logs.example/in", "/var/log/app/*.log", "--exclude", "*.gz", "--exclude=/var/log/app/x.log",
                    "--max-open-files", "10", "--read-chunk", "16k", "--forget-after", "2h", "--max-record", "64k", "--from-start",
                ])
        else {
            Issue.record("not a tail command")
            return
        }
        #expect(options.patterns == ["/var/log/a.log", "/var/log/app/*.log"])
        #expect(options.upload.url == "HTTPS://logs.example/in")
        #expect(options.excludes == ["*.gz", "/var/log/app/x.log"])
        #expect(options.forgetAfter == .seconds(7200))
        // Followed files wait out a receiver's outage of any length.
        #expect(options.upload.libraryOptions.retry.maxRetries == nil)
        let tailer = options.tailerOptions
        #expect(tailer.maxOpenFiles == 10 && tailer.readChunk == 16 << 10 && tailer.maxLineBytes == 64 << 10)
        #expect(tailer.startAt == .beginning && tailer.excludes == options.excludes)
        // Without a URL: the local sink; the defaults.
        guard case .tail(let plain) = try CommandLineParser.parse(["tail", "app.log"]) else {
            Issue.record("not a tail command")
            return
        }
        #expect(plain.upload.url == nil && plain.patterns == ["app.log"])
        var expected = FileTailer.Options()
        expected.gatherDelay = .milliseconds(100)
        #expect(plain.tailerOptions == expected)
        #expect(plain.forgetAfter == .seconds(24 * 3600))
    }

    /// With segments the tailer lets a tenth of a segment time's lines gather (at most 100 ms),
    /// since they wait for their segment's end anyway; one request keeps the library's 5 ms.
    @Test func tailGathersLinesForATenthOfASegment() throws {
        func gather(_ arguments: [String]) throws -> Duration? {
            guard case .tail(let options) = try CommandLineParser.parse(["tail", "app.log", "http://h/in"] + arguments) else { return nil }
            return options.tailerOptions.gatherDelay
        }
        #expect(try gather([]) == .milliseconds(100))
        #expect(try gather(["--segment-seconds", "300ms"]) == .milliseconds(30))
        #expect(try gather(["--segment-seconds", "10ms"]) == FileTailer.Options().gatherDelay)
        #expect(try gather(["--single-request"]) == FileTailer.Options().gatherDelay)
    }

    /// `tail` without a file, or with a limit that cannot work is a usage error.
    @Test func tailUsageErrors() {
        #expect(throws: UsageError("tail: expected at least one FILE or PATTERN to follow (see --help)")) {
            try CommandLineParser.parse(["tail", "http://h/in"])
        }
        #expect(throws: UsageError("--endpoints balance needs two URLs or more")) {
            try CommandLineParser.parse(["tail", "--endpoints", "balance", "a.log", "http://a"])
        }
        #expect(throws: UsageError("--max-open-files: '0' is not a positive number")) {
            try CommandLineParser.parse(["tail", "--max-open-files", "0", "a.log"])
        }
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["tail", "--forget-after", "soon", "a.log"]) }
    }

    /// Several URLs are several endpoints, for stdin, `tail` and `heartbeat` alike (the first is
    /// the URL); `--endpoints` picks how they share the segments.
    @Test func severalURLsAreEndpoints() throws {
        guard case .upload(let upload) = try CommandLineParser.parse(["--endpoints", "balance", "http://a/", "http://b/", "http://c/"]) else {
            Issue.record("not an upload")
            return
        }
        #expect(upload.urls == ["http://a/", "http://b/", "http://c/"] && upload.endpointChoice == .balance)
        guard case .tail(let tail) = try CommandLineParser.parse(["tail", "http://a/", "a.log", "http://b/"]) else {
            Issue.record("not tail")
            return
        }
        #expect(tail.upload.urls == ["http://a/", "http://b/"] && tail.patterns == ["a.log"] && tail.upload.endpointChoice == nil)
        guard case .heartbeat(let heartbeat) = try CommandLineParser.parse(["heartbeat", "http://a/", "http://b/", "--", "true"]) else {
            Issue.record("not heartbeat")
            return
        }
        #expect(heartbeat.upload.urls == ["http://a/", "http://b/"] && heartbeat.command == ["true"])
        #expect(throws: UsageError("heartbeat: 'true' is not an http or https URL (put a command after --)")) {
            try CommandLineParser.parse(["heartbeat", "http://a/", "true"])
        }
    }

    /// `heartbeat --help` tells how beats travel as they do: in acknowledged requests like
    /// stdin's (one chunked request only with --single-request), not "as one long chunked
    /// request", which it said after segments became the default.
    @Test func heartbeatHelpDescribesItsDelivery() throws {
        guard case .help(let text) = try CommandLineParser.parse(["heartbeat", "--help"]) else {
            Issue.record("no help")
            return
        }
        #expect(text.contains("in acknowledged requests"))
        #expect(!text.contains("as one long chunked request:"))
        #expect(!text.contains("end of body"))
    }

    /// `--help` warns that with `-X PUT` each segment is a PUT of its own: nginx's WebDAV
    /// (`dav_methods PUT`) kept 2,996 of 6,000 lines, the last segment, and streamup exited 0
    /// (seen in a trial, 2026-11-25).
    @Test func helpSaysEachSegmentIsAPutOfItsOwn() throws {
        guard case .help(let text) = try CommandLineParser.parse(["--help"]) else {
            Issue.record("no help")
            return
        }
        let words = text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(words.contains("each segment is a request of its own: a server that stores a PUT as a file"))
    }

    /// Every help page fits a 100-column terminal, and the main one a screen or two: options
    /// under their headings, details in `streamup help TOPIC` (the main help was 141 lines, 43
    /// of them over 100 columns, up to 475 characters).
    @Test func helpPagesFitA100ColumnTerminal() throws {
        var pages = [("streamup --help", UploadOptions.help)]
        for command in ["tail", "heartbeat", "sink"] {
            guard case .help(let text) = try CommandLineParser.parse([command, "--help"]) else {
                Issue.record("\(command) --help is not help")
                continue
            }
            pages.append(("streamup \(command) --help", text))
        }
        for topic in HelpTopic.allCases {
            guard case .help(let text) = try CommandLineParser.parse(["help", topic.rawValue]) else {
                Issue.record("help \(topic.rawValue) is not help")
                continue
            }
            pages.append(("streamup help \(topic.rawValue)", text))
        }
        for (name, text) in pages {
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) where line.count > HelpLayout.width {
                Issue.record("\(name): \(line.count) columns: \(line)")
            }
        }
        let mainLines = UploadOptions.help.split(separator: "\n", omittingEmptySubsequences: false).count
        #expect(mainLines <= 100, "streamup --help has \(mainLines) lines")
    }

    /// The main help lists its options under the headings, in order, each option once, and
    /// names every help topic; `streamup help` alone is the main help; an unknown topic is a
    /// usage error that names the topics.
    @Test func helpGroupsOptionsAndNamesItsTopics() throws {
        let text = UploadOptions.help
        let headings = ["\ninput:\n", "\nrecords and bodies:\n", "\ndelivery:\n", "\nreceivers and requests:\n", "\noutput:\n"]
        let positions = headings.compactMap { text.range(of: $0)?.lowerBound }
        #expect(positions.count == headings.count && positions == positions.sorted(), "headings missing or out of order")
        for spec in UploadOptions.table where !spec.help.isEmpty {
            let label = "  " + spec.names.joined(separator: ", ") + (spec.valueName.map { " \($0)" } ?? "")
            #expect(text.components(separatedBy: "\n" + label).count == 2, "\(label) is not listed once")
        }
        // An entry without help is named by a listed one (--capath beside --cacert).
        for spec in UploadOptions.table where spec.help.isEmpty {
            #expect(UploadOptions.table.contains { !$0.help.isEmpty && $0.names.contains(spec.names[0]) }, "\(spec.names) is not listed")
        }
        for topic in HelpTopic.allCases {
            #expect(text.contains(topic.rawValue), "the help does not name topic \(topic.rawValue)")
        }
        // The sink's groups: where it listens and stores, its limits, its faults.
        let sink = SinkOptions.help
        let server = try #require(sink.range(of: "\nserver:\n"))
        let limits = try #require(sink.range(of: "\nlimits on clients:\n"))
        let output = try #require(sink.range(of: "\n  -o, --output DIR            store each request body in its own file in DIR"))
        #expect(server.upperBound <= output.lowerBound && output.upperBound <= limits.lowerBound)
        #expect(try CommandLineParser.parse(["help"]) == .help(UploadOptions.help))
        #expect(throws: UsageError("help: 'nope' is not a topic (delivery, endpoints, records, receivers, secrets, metrics, exit)")) {
            try CommandLineParser.parse(["help", "nope"])
        }
    }

    /// `tail --help` names the new form and its options.
    @Test func tailHelpDescribesPatterns() throws {
        guard case .help(let text) = try CommandLineParser.parse(["tail", "--help"]) else {
            Issue.record("no help")
            return
        }
        for words in [
            "usage: streamup tail [options] PATTERN... [URL...]", "--exclude PATTERN", "--max-open-files N", "--forget-after DURATION",
            "a file\n    that appears later is read from its beginning",
        ] {
            #expect(text.contains(words), "\(words)")
        }
    }

    /// curl's TLS options, on every command: the files as given (made absolute), nothing when
    /// none is given; `-k`, a key without its certificate and an option given twice are usage
    /// errors.
    @Test func tlsOptionsAreParsed() throws {
        let options = try upload(["--cacert", "ca.pem", "--capath", "/etc/cas", "--cert", "/c.pem", "--key", "/k.pem", "https://h/x"])
        let tls = try #require(options.tls.configuration)
        #expect(tls.caCertificates?.path == URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("ca.pem").path)
        #expect(tls.caDirectory?.path == "/etc/cas" && tls.clientCertificate?.path == "/c.pem" && tls.clientKey?.path == "/k.pem")
        #expect(try upload(["https://h/x"]).tls.configuration == nil)
        guard case .tail(let tail) = try CommandLineParser.parse(["tail", "--cert", "/c.pem", "/a.log", "https://h/"]),
            case .heartbeat(let beat) = try CommandLineParser.parse(["heartbeat", "--cacert", "/ca.pem", "https://h/"])
        else {
            Issue.record("not a tail and a heartbeat")
            return
        }
        #expect(tail.upload.tls.configuration?.clientCertificate?.path == "/c.pem")
        #expect(beat.upload.tls.configuration?.caCertificates?.path == "/ca.pem")
        #expect(throws: UsageError("-k: streamup always verifies the server's certificate; give the CA that issued it with --cacert FILE (PEM)")) {
            try CommandLineParser.parse(["-k", "https://h/"])
        }
        #expect(throws: UsageError("--key names the key of a client certificate: add --cert FILE (the certificate the key belongs to)")) {
            try CommandLineParser.parse(["--key", "/k.pem", "https://h/"])
        }
        #expect(throws: UsageError("--cacert: given twice")) { try CommandLineParser.parse(["--cacert", "a", "--cacert", "b", "https://h/"]) }
    }
}
