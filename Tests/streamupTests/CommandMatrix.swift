import Foundation
import StreamUpTestSupport
import Testing

// The command matrix: every command users run × every place README says it can send to ×
// every delivery variant README promises for them, as one table (``MatrixRow/table``).
// A new command, preset or variant is covered by adding one entry to its list below; the
// test (`CommandMatrixTests`) runs every row end to end through the built binary.

/// One way users run streamup.
///
/// Thread safety: a value type.
enum MatrixCommand: String, CaseIterable, Sendable {
    /// `streamup [options] URL` with the lines on stdin, which then ends.
    case stdin
    /// `streamup tail [options] FILE URL`: the file appears after the start (README: "a file
    /// that appears later is read from its beginning"), its lines written in two writes; then
    /// SIGTERM.
    case tail
    /// `streamup heartbeat --every 100ms [options] URL`: a few beats, then SIGTERM (a final
    /// `{"event":"stop"}` record).
    case heartbeat
    /// `streamup journal --directory DIR --from-start [options] URL`: the lines are journal
    /// entries' messages, written after the start; then SIGTERM.
    case journal
    /// `streamup run FILE` with FILE one line: the `tail` row's command (``MatrixRow/pipelineLine``).
    case run
}

/// A variant of the commands: options README promises, where they run, what goes in and what
/// the receiver must then hold. The delivery variants (defaults, gzip, spool, dead letters) run
/// with every command and target; an option added since runs with the commands and targets
/// users combine it with (``runs``), so a new option is one entry of ``all``, not a new
/// dimension of the table.
///
/// Thread safety: a value type.
struct MatrixVariant: Sendable {
    /// Where several URLs point.
    enum Endpoints: Sendable, Equatable {
        /// The receiver's URL alone.
        case one
        /// A URL nothing listens at (the preset's path added), then the receiver's.
        case deadFirst
    }

    /// The options, with `DIR` standing for the row's own directory.
    let options: [String]
    /// The commands and targets (preset names, `sink` for none) it runs with; nil: all of them.
    let runs: [MatrixCommand: [String]]?
    /// What stdin and tail rows send, and the records they make.
    var input = MatrixInput.lines
    var endpoints = Endpoints.one
    /// Whether the row scrapes `--metrics 0` while streamup runs.
    var scrapesMetrics = false
    /// Whether the bytes go as they are, not as whole lines (`--records none`): a request to
    /// the sink then need not end on a line.
    var opaque = false
    /// The requests the receiver must have got, where it says: nil (any), `["POST"]` (one
    /// request), or the methods that must be among them.
    var methods: [String]?
    /// Options for the validator standing in for the receiver (how it misbehaves).
    var validatorOptions: [String] = []

    init(_ options: [String], methods: [String]? = nil, runs: [MatrixCommand: [String]]? = nil) {
        self.options = options
        self.methods = methods
        self.runs = runs
    }

    /// Where `--dead-letter` keeps refused records, in the row's directory `scratch`.
    static func deadLetterDirectory(scratch: String) -> String { scratch + "/dead" }

    /// The delivery variants README promises with every command and preset: the defaults
    /// (acknowledged segments, the replay buffer in memory), `--compress gzip`, `--spool DIR`
    /// (the unacknowledged bytes on disk), `--dead-letter DIR` (nothing kept, in a good row).
    static let delivery: [MatrixVariant] = [
        MatrixVariant([]), MatrixVariant(["--compress", "gzip"]), MatrixVariant(["--spool", "DIR/spool"]),
        MatrixVariant(["--dead-letter", "DIR/dead"]),
    ]

    /// The options README's usage examples add, each with what users combine it with.
    static let added: [MatrixVariant] = [
        // Multiline records (README "Multiline records"): a trace is one record.
        MatrixVariant(["--multiline", "java"], runs: [.stdin: ["loki", "elasticsearch", "clickhouse"], .tail: ["loki", "elasticsearch", "clickhouse"]])
            .with(input: .javaTrace),
        MatrixVariant(["--multiline", "start=^\\d{4}-\\d\\d-\\d\\d ", "--format", "ndjson"], runs: [.tail: ["sink"]])
            .with(input: .javaTrace),
        MatrixVariant(["--multiline", "python"], runs: [.stdin: ["otlp"]]).with(input: .pythonTrace),
        MatrixVariant(["--multiline", "go"], runs: [.tail: ["loki"]]).with(input: .goPanic),
        MatrixVariant(["--multiline", "indented"], runs: [.stdin: ["fluent-bit"]]).with(input: .indented),
        // Container logs (README "Container logs").
        MatrixVariant(["--parse", "cri"], runs: [.tail: ["loki", "elasticsearch"], .stdin: ["loki", "elasticsearch"]]).with(input: .cri),
        MatrixVariant(["--parse", "cri", "--format", "ndjson"], runs: [.tail: ["sink"]]).with(input: .cri),
        MatrixVariant(["--parse", "cri", "--multiline", "java"], runs: [.tail: ["loki"]]).with(input: .criJavaTrace),
        MatrixVariant(["--parse", "docker", "--format", "ndjson"], runs: [.tail: ["sink"]]).with(input: .docker),
        MatrixVariant(["--parse", "docker"], runs: [.stdin: ["elasticsearch"]]).with(input: .docker),
        // Several endpoints (README "Several endpoints"), one of them down.
        MatrixVariant([], runs: [.stdin: ["loki"], .tail: ["sink"], .heartbeat: ["elasticsearch"]]).with(endpoints: .deadFirst),
        MatrixVariant(["--endpoints", "balance"], runs: [.stdin: ["sink"], .tail: ["loki"], .heartbeat: ["clickhouse"]]).with(endpoints: .deadFirst),
        // Metrics (README "Metrics and health"), scraped while streamup runs.
        MatrixVariant(["--metrics", "0"], runs: [.stdin: ["sink"], .tail: ["loki"], .heartbeat: ["sink"]]).scrapingMetrics(),
        // One request (README "Delivery"): the receivers that take one.
        MatrixVariant(
            ["--single-request"], methods: ["POST"],
            runs: [.stdin: ["sink", "clickhouse"], .heartbeat: ["victorialogs"]]),
        // The resumable-upload protocol: the sink speaks it (no preset does).
        MatrixVariant(["--resumable"], methods: ["POST", "PATCH"], runs: [.stdin: ["sink"], .tail: ["sink"], .heartbeat: ["sink"]]),
        // Opaque bytes, and records of your own.
        MatrixVariant(["--records", "none"], runs: [.stdin: ["sink"], .tail: ["sink"]]).opaqueBytes(),
        MatrixVariant(["--format", "ndjson", "--field", "service=billing"], runs: [.stdin: ["sink"], .tail: ["sink"]]),
        // Filters (README "Drop, keep and redact"): lines left out, secrets replaced, before the buffer.
        MatrixVariant(filterOptions, runs: [.stdin: ["sink", "loki", "elasticsearch"], .tail: ["sink", "loki", "clickhouse", "splunk-hec"]])
            .with(input: .filtered),
        MatrixVariant(["--keep", "^(ERROR|WARN) "], runs: [.stdin: ["otlp"], .tail: ["sink"]]).with(input: .kept),
        // OTLP (protobuf) as a pipeline; OTLP/HTTP JSON, which takes only these and the window's
        // rows: its records are the protobuf rows' records, in the other encoding.
        MatrixVariant([], runs: [.run: ["otlp"]]),
        MatrixVariant(["--compress", "gzip"], runs: [.stdin: ["otlp-json"], .tail: ["otlp-json"]]),
        MatrixVariant(filterOptions + ["--metrics", "0"], runs: [.stdin: ["sink"], .tail: ["loki"]]).with(input: .filtered).scrapingMetrics(),
        MatrixVariant(filterOptions + ["--format", "ndjson"], runs: [.tail: ["sink"], .journal: ["sink", "victorialogs"]]).with(input: .filtered),
        MatrixVariant(["--metrics", "0"], runs: [.journal: ["sink"]]).scrapingMetrics(),
        MatrixVariant(filterOptions, runs: [.run: ["sink", "elasticsearch"]]).with(input: .filtered),
        MatrixVariant(["--parse", "cri"], runs: [.run: ["loki"]]).with(input: .cri),
        // After joining: a whole trace goes, and a container's message is what is matched.
        MatrixVariant(["--multiline", "java", "--drop", "IllegalStateException"], runs: [.stdin: ["sink"], .tail: ["elasticsearch"]])
            .with(input: .javaTraceDropped),
        MatrixVariant(["--parse", "cri", "--drop", "^plain line", "--redact", "日本語"], runs: [.tail: ["loki"]]).with(input: .criFiltered),
        // `--redact` as people write it: the whole value is the pattern, masked with ***.
        MatrixVariant(["--redact", "password=[^ ]*"], runs: [.stdin: ["sink"]]).with(input: .redactedAsTyped),
        // Lost answers (README "Receivers": exactly once where the receiver drops a resend):
        // every second request is stored and its answer never comes; a record a segment,
        // so that the run has several.
        MatrixVariant(
            ["--segment-bytes", "64"],
            runs: [.stdin: ["loki", "elasticsearch", "opensearch"], .tail: ["loki", "elasticsearch"]]
        ).losingAnswers(every: 2),
        // The same with a state file and no spool: records named after their lines and timed
        // from the bases the state file keeps (README "Receivers": which restarts keep it).
        MatrixVariant(
            ["--segment-bytes", "64", "--state", "DIR/state.json"], runs: [.tail: ["loki", "elasticsearch", "opensearch"]]
        ).losingAnswers(every: 2),
        // Several requests out at once (README "Delivery"): a record or two a segment, so that
        // the window has several to send; every record stored once, in the receiver's own
        // order where it has one. With every target, so a new preset is covered here too.
        MatrixVariant(["--max-in-flight", "4", "--segment-bytes", "64"], runs: [.stdin: everyTarget, .heartbeat: everyTarget]),
        MatrixVariant(
            ["--max-in-flight", "4", "--segment-bytes", "64", "--state", "DIR/state.json", "--spool", "DIR/spool"], runs: [.tail: everyTarget]),
    ]

    /// Every target's name in ``runs`` (`sink` for none).
    static var everyTarget: [String] { MatrixTarget.all.map { $0.preset ?? "sink" } }

    /// The filters of the ``MatrixInput/filtered`` rows: debug lines out, a password and a card
    /// number replaced.
    static let filterOptions = ["--drop", "^DEBUG ", "--redact", "(password=)\\S+", "--redact-with", "$1***", "--redact", "\\d{4}(-\\d{4}){3}"]

    /// Every variant.
    static let all = delivery + added

    /// Whether it runs `command` into `target`.
    func runs(_ command: MatrixCommand, _ target: MatrixTarget) -> Bool {
        guard let runs else {
            guard target.takesDeliveryVariants else { return false }
            switch command {
            case .journal: return Self.journalTargets.contains(target.preset ?? "sink")
            case .run: return Self.runTargets.contains(target.preset ?? "sink")
            case .stdin, .tail, .heartbeat: return true
            }
        }
        return runs[command]?.contains(target.preset ?? "sink") ?? false
    }

    /// The targets the delivery variants run `journal` with: the same records as `tail`'s,
    /// one line each, so a few receivers of each kind stand for all. (ClickHouse refuses the
    /// fields unit, priority, … unless its table has those columns: code 117.)
    static let journalTargets = ["sink", "loki", "elasticsearch", "victorialogs", "otlp"]
    /// The targets the delivery variants run `run` with: its pipelines are the commands'.
    static let runTargets = ["sink", "loki", "clickhouse"]

    /// Whether the sink stores JSON records (`--format`), whose message the row compares.
    var formatsRecords: Bool { options.contains("--format") }

    /// The fields its `--field K=V` options put on every record.
    var fields: [String: String] {
        var fields: [String: String] = [:]
        for (option, value) in zip(options, options.dropFirst()) where option == "--field" {
            let parts = value.split(separator: "=", maxSplits: 1).map(String.init)
            fields[parts[0]] = parts.count > 1 ? parts[1] : ""
        }
        return fields
    }

    /// Its options; `scratch` is the row's own directory.
    func arguments(scratch: String) -> [String] {
        options.map { $0.hasPrefix("DIR/") ? scratch + $0.dropFirst(3) : $0 }
    }

    func with(input: MatrixInput) -> MatrixVariant {
        var variant = self
        variant.input = input
        return variant
    }

    func with(endpoints: Endpoints) -> MatrixVariant {
        var variant = self
        variant.endpoints = endpoints
        return variant
    }

    func scrapingMetrics() -> MatrixVariant {
        var variant = self
        variant.scrapesMetrics = true
        return variant
    }

    /// Whether the receiver loses answers on purpose (``losingAnswers(every:)``): streamup says
    /// delivery is failing, and goes on.
    var losesAnswers: Bool { validatorOptions.contains("--lose-answers") }

    /// The validator stores every `n`th request and closes its connection unanswered.
    func losingAnswers(every n: Int) -> MatrixVariant {
        var variant = self
        variant.validatorOptions = ["--lose-answers", String(n)]
        return variant
    }

    func opaqueBytes() -> MatrixVariant {
        var variant = self
        variant.opaque = true
        return variant
    }
}

/// What stdin and tail rows send, and the records the receiver must then hold.
///
/// Thread safety: a value type.
struct MatrixInput: Sendable {
    /// One record as the receiver shows it: its message, and the fields a `--format ndjson`
    /// record into the sink must carry (beside `time`, `host`, `path`).
    struct Record: Sendable {
        var message: [UInt8]
        var fields: [String: String] = [:]
    }

    /// The lines written, without their newlines.
    let lines: [[UInt8]]
    /// The records they make, in order.
    let records: [Record]

    init(lines: [[UInt8]], records: [Record]) {
        self.lines = lines
        self.records = records
    }

    init(text lines: [String], records: [String]) {
        self.init(lines: lines.map { Array($0.utf8) }, records: records.map { Record(message: Array($0.utf8)) })
    }

    /// Lines ``MatrixVariant/filterOptions`` leave out or redact.
    static let filtered = MatrixInput(
        text: [
            "INFO started", "DEBUG cache warm", "INFO login user=ann password=hunter2 é", "DEBUG noise 2",
            "ERROR card 4111-1111-1111-1111 refused", "INFO done",
        ],
        records: ["INFO started", "INFO login user=ann password=*** é", "ERROR card *** refused", "INFO done"])

    /// Lines with a password, for `--redact 'password=[^ ]*'`.
    static let redactedAsTyped = MatrixInput(
        text: ["INFO login user=ann password=hunter2 é", "INFO password= empty", "INFO done"],
        records: ["INFO login user=ann *** é", "INFO *** empty", "INFO done"])

    /// Lines of which `--keep '^(ERROR|WARN) '` keeps two.
    static let kept = MatrixInput(
        text: ["INFO started", "WARN disk 91% é", "DEBUG x", "ERROR disk full", "", "INFO done"], records: ["WARN disk 91% é", "ERROR disk full"])

    /// ``javaTrace`` with `--drop IllegalStateException`: the joined trace goes whole.
    static let javaTraceDropped = MatrixInput(lines: javaTrace.lines, records: [javaTrace.records[0], javaTrace.records[2]])

    /// ``cri`` with `--drop '^plain line' --redact 日本語`.
    static let criFiltered = MatrixInput(
        lines: cri.lines,
        records: [
            Record(message: Array("a long line written in three pieces é".utf8), fields: ["stream": "stderr"]),
            Record(message: Array("unicode *** 😀".utf8), fields: ["stream": "stdout"]),
        ])

    /// The lines of ``MatrixRow/lines``, a record each.
    static let lines = MatrixInput(lines: MatrixRow.lines, records: MatrixRow.lines.map { Record(message: $0) })

    /// A Java exception between two log lines, as logback writes it.
    static let javaTrace: MatrixInput = {
        let trace = [
            "2026-11-25 10:00:00 ERROR failed é", "java.lang.IllegalStateException: boom", "\tat com.example.Service.call(Service.java:1)",
            "\tat com.example.Main.main(Main.java:9)", "Caused by: java.io.IOException: disk full", "\tat com.example.Disk.write(Disk.java:7)",
            "\t... 12 more",
        ]
        let before = "2026-11-25 09:59:59 INFO started"
        let after = "2026-11-25 10:00:01 INFO done"
        return MatrixInput(text: [before] + trace + [after], records: [before, trace.joined(separator: "\n"), after])
    }()

    /// A logged message with its traceback and a chained one, between two log lines.
    static let pythonTrace: MatrixInput = {
        let trace = [
            "ERROR:root:failed é", "Traceback (most recent call last):", "  File \"app.py\", line 3, in <module>", "    main()", "KeyError: 'user'", "",
            "During handling of the above exception, another exception occurred:", "", "Traceback (most recent call last):",
            "  File \"app.py\", line 5, in <module>", "ValueError: bad user",
        ]
        return MatrixInput(
            text: ["INFO:root:started"] + trace + ["INFO:root:done"], records: ["INFO:root:started", trace.joined(separator: "\n"), "INFO:root:done"])
    }()

    /// A message continued by indented lines (a tab, spaces), between two log lines.
    static let indented: MatrixInput = {
        let message = ["ERROR request failed", "\tpath=/api/v1 é", "  retry=3", "\t  cause: timeout"]
        return MatrixInput(text: ["INFO started"] + message + ["INFO done"], records: ["INFO started", message.joined(separator: "\n"), "INFO done"])
    }()

    /// A Go panic with two goroutines between two log lines.
    static let goPanic: MatrixInput = {
        let panic = [
            "panic: runtime error: index out of range [3] with length 3", "", "goroutine 1 [running]:", "main.main()",
            "\t/app/main.go:8 +0x1d", "", "goroutine 6 [chan receive]:", "main.worker()", "\t/app/main.go:20 +0x2a",
            "created by main.main in goroutine 1", "\t/app/main.go:7 +0x1a",
        ]
        return MatrixInput(
            text: ["level=info msg=started"] + panic + ["level=info msg=restarted"],
            records: ["level=info msg=started", panic.joined(separator: "\n"), "level=info msg=restarted"])
    }()

    /// A CRI line: `TIME STREAM P|F MESSAGE`.
    private static func cri(_ stream: String, _ tag: String, _ message: String, nanosecond: Int) -> String {
        "2026-11-25T10:00:00.\(String(format: "%09d", nanosecond))Z \(stream) \(tag) \(message)"
    }

    /// What containerd writes: whole lines of both streams, and a long line in three pieces.
    static let cri = MatrixInput(
        lines: [
            cri("stdout", "F", "plain line 1", nanosecond: 1), cri("stderr", "P", "a long line written ", nanosecond: 2),
            cri("stderr", "P", "in three ", nanosecond: 3), cri("stderr", "F", "pieces é", nanosecond: 4),
            cri("stdout", "F", "unicode 日本語 😀", nanosecond: 5),
        ].map { Array($0.utf8) },
        records: [
            Record(message: Array("plain line 1".utf8), fields: ["stream": "stdout"]),
            Record(message: Array("a long line written in three pieces é".utf8), fields: ["stream": "stderr"]),
            Record(message: Array("unicode 日本語 😀".utf8), fields: ["stream": "stdout"]),
        ])

    /// A Java trace a container wrote to stderr, in CRI lines.
    static let criJavaTrace: MatrixInput = {
        let java = javaTrace.lines.map { String(decoding: $0, as: UTF8.self) }
        let lines = java.enumerated().map { cri($0.offset == 0 ? "stdout" : "stderr", "F", $0.element, nanosecond: $0.offset + 1) }
        let records = ["2026-11-25 09:59:59 INFO started", java[1..<(java.count - 1)].joined(separator: "\n"), java[java.count - 1]]
        return MatrixInput(text: lines, records: records)
    }()

    /// What Docker's json-file driver writes: whole lines, and a long one in two pieces.
    static let docker: MatrixInput = {
        func line(_ log: String, _ stream: String) -> String {
            "{\"log\":\"\(log)\",\"stream\":\"\(stream)\",\"time\":\"2026-11-25T10:00:00.000000001Z\"}"
        }
        return MatrixInput(
            lines: [
                line("plain line 1\\n", "stdout"), line("a long line in ", "stderr"), line("two pieces \\\"quoted\\\"\\n", "stderr"),
                line("unicode \\u00e9 日本語\\n", "stdout"),
            ].map { Array($0.utf8) },
            records: [
                Record(message: Array("plain line 1".utf8), fields: ["stream": "stdout"]),
                Record(message: Array("a long line in two pieces \"quoted\"".utf8), fields: ["stream": "stderr"]),
                Record(message: Array("unicode é 日本語".utf8), fields: ["stream": "stdout"]),
            ])
    }()
}

/// Where a row sends: the sink (no preset), or a receiver by its preset, as README's
/// "Receivers" table gives its copy-paste command.
///
/// Thread safety: a value type.
struct MatrixTarget: Sendable {
    /// What stands in for the receiver.
    enum Server: Sendable, Equatable {
        /// The sink (`StreamUpSink`, what `streamup sink` runs), storing what it gets.
        case sink
        /// `Tests/Receivers/receiver.py KIND`, written from the receiver's API documentation.
        case validator(String)
        /// The real ClickHouse server, with README's `logs` table.
        case clickhouse
    }

    /// What the receiver shows for a line that is empty.
    enum EmptyLine: Sendable, Equatable {
        /// A record with an empty message.
        case kept
        /// No record (Splunk HEC refuses a blank event; README: "blank lines send no event").
        case dropped
        /// A record with this text (VictoriaLogs drops empty fields and gives a record without
        /// `_msg` its default message).
        case shownAs(String)
    }

    /// The `--to` name; nil for the plain command into the sink.
    let preset: String?
    let server: Server
    /// The rest of README's copy-paste command for the preset (labels, the token header).
    let options: [String]
    /// Added to the server's URL (an index, a tag), as in README's command.
    let path: String
    /// What the validator is started with (the one token it takes).
    let validatorOptions: [String]
    let emptyLine: EmptyLine
    /// Whether the lines arrive as they are, byte for byte (no preset: the sink stores bytes),
    /// rather than as text, in which a byte that is not UTF-8 is U+FFFD
    /// (receivers that store JSON strings need valid Unicode).
    let keepsBytes: Bool
    /// Whether the delivery variants run with it (every command and variant); false for a
    /// preset that is another's in a second encoding, which runs only where a variant names it.
    var takesDeliveryVariants = true

    init(
        _ preset: String?, _ server: Server, options: [String] = [], path: String = "", validatorOptions: [String] = [],
        emptyLine: EmptyLine = .kept, keepsBytes: Bool = false, takesDeliveryVariants: Bool = true
    ) {
        self.takesDeliveryVariants = takesDeliveryVariants
        self.preset = preset
        self.server = server
        self.options = options
        self.path = path
        self.validatorOptions = validatorOptions
        self.emptyLine = emptyLine
        self.keepsBytes = keepsBytes
    }

    /// Every target: the sink, and each `--to` name README lists.
    static let all: [MatrixTarget] = [
        MatrixTarget(nil, .sink, keepsBytes: true),
        MatrixTarget(
            "victorialogs", .validator("victorialogs"),
            emptyLine: .shownAs("missing _msg field; see https://docs.victoriametrics.com/victorialogs/keyconcepts/#message-field")),
        MatrixTarget("loki", .validator("loki"), options: ["--label", "job=app"]),
        MatrixTarget("elasticsearch", .validator("elasticsearch"), options: ["-H", "Authorization: ApiKey KEY"], path: "/logs-app-default"),
        MatrixTarget("opensearch", .validator("opensearch")),
        MatrixTarget("clickhouse", .clickhouse),
        MatrixTarget(
            "splunk-hec", .validator("splunk-hec"), options: ["-H", "Authorization: Splunk TOKEN"], validatorOptions: ["--token", "TOKEN"],
            emptyLine: .dropped),
        // As VictoriaLogs, Elasticsearch and Datadog do, the validator takes only protobuf here.
        MatrixTarget("otlp", .validator("otlp"), options: ["--label", "service.name=billing"], validatorOptions: ["--encodings", "protobuf"]),
        MatrixTarget("otlp-json", .validator("otlp"), options: ["--label", "service.name=billing"], takesDeliveryVariants: false),
        MatrixTarget("datadog", .validator("datadog"), options: ["-H", "DD-API-KEY: KEY"], validatorOptions: ["--api-key", "KEY"]),
        MatrixTarget("vector", .validator("vector")),
        MatrixTarget("fluent-bit", .validator("fluent-bit"), path: "/app.logs"),
    ]

    /// `--to NAME` and the preset's options (nothing for the sink).
    var arguments: [String] { preset.map { ["--to", $0] + options } ?? [] }

    /// What the receiver shows for `line`: nil when it makes no record.
    func shown(_ line: [UInt8]) -> [UInt8]? {
        if line.isEmpty {
            switch emptyLine {
            case .kept: return line
            case .dropped: return nil
            case .shownAs(let text): return Array(text.utf8)
            }
        }
        return keepsBytes ? line : Array(String(decoding: line, as: UTF8.self).utf8)
    }
}

/// One case of the matrix: a command, a target, a variant.
///
/// Thread safety: a value type.
struct MatrixRow: Sendable, CustomTestStringConvertible {
    let command: MatrixCommand
    let target: MatrixTarget
    let variant: MatrixVariant

    /// The rows: every variant with every command and target it runs with (the delivery
    /// variants with all of them).
    static func table(variants: [MatrixVariant] = MatrixVariant.all) -> [MatrixRow] {
        variants.flatMap { variant in
            MatrixCommand.allCases.flatMap { command in
                MatrixTarget.all.filter { variant.runs(command, $0) }.map { MatrixRow(command: command, target: $0, variant: variant) }
            }
        }
    }

    /// The rows the tests run: the whole table, or with `STREAMUP_MATRIX_ROWS=TEXT` in the
    /// environment only the rows whose description (``testDescription``) contains TEXT, e.g.
    /// `STREAMUP_MATRIX_ROWS='tail --to loki'`.
    static var selected: [MatrixRow] {
        let only = ProcessInfo.processInfo.environment["STREAMUP_MATRIX_ROWS"]
        return table().filter { row in only.map { row.testDescription.contains($0) } ?? true }
    }

    /// The lines stdin and tail rows send: plain ASCII; quotes, backslashes, a tab and an
    /// escape sequence; multi-byte UTF-8; an empty line; and a Latin-1 byte that is not UTF-8.
    static let lines: [[UInt8]] = [
        Array("plain ASCII line 1".utf8),
        Array("quotes \"2\" and \\back\\slash\ttab \u{1B}[1mbold\u{1B}[0m {\"json\":[2]}".utf8),
        Array("unicode é 日本語 😀 3".utf8),
        [],
        Array("latin-1 caf".utf8) + [0xE9] + Array(" 5".utf8),
    ]

    /// The command line after `streamup`, for `target` at `url` (with `dead`, a URL nothing
    /// listens at, for a row with a dead endpoint) and a file `log` (tail).
    func arguments(url: String, dead: String, log: String, scratch: String) -> [String] {
        let options = target.arguments + variant.arguments(scratch: scratch)
        let urls = variant.endpoints == .deadFirst ? [dead + target.path, url] : [url]
        switch command {
        case .stdin: return options + urls
        case .tail: return ["tail"] + options + [log] + urls
        case .heartbeat: return ["heartbeat", "--every", "100ms"] + options + urls
        case .journal: return ["journal", "--directory", scratch + "/journal", "--from-start"] + options + urls
        case .run: return ["run", scratch + "/pipelines.conf"]
        }
    }

    /// A `run` row's pipelines file: the `tail` row's command on one line, each word quoted.
    func pipelineLine(url: String, dead: String, log: String, scratch: String) -> String {
        let tail = MatrixRow(command: .tail, target: target, variant: variant).arguments(url: url, dead: dead, log: log, scratch: scratch)
        return "# the tail row as a pipeline\n" + tail.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ") + "\n"
    }

    /// Whether the row sends OTLP in protobuf (`--to otlp`), which the validator decodes with
    /// Python's `opentelemetry-proto`.
    var sendsProtobuf: Bool { target.preset == "otlp" }

    /// How the row reads in the test list, as the command a user types.
    var testDescription: String {
        let words =
            [command == .stdin ? "streamup" : "streamup \(command.rawValue)"]
            + (target.preset.map { ["--to", $0] } ?? ["(sink)"])
            + variant.arguments(scratch: "DIR") + (variant.endpoints == .deadFirst ? ["DEAD-URL", "URL"] : [])
            + (variant.validatorOptions.isEmpty ? [] : ["(receiver " + variant.validatorOptions.joined(separator: " ") + ")"])
        return words.joined(separator: " ")
    }
}
