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
}

/// A delivery variant README promises with every command and preset.
///
/// Thread safety: a value type.
enum MatrixVariant: String, CaseIterable, Sendable {
    /// The defaults: acknowledged segments, the replay buffer in memory.
    case plain
    /// `--compress gzip`: every request one gzip member.
    case gzip
    /// `--spool DIR`: the unacknowledged bytes on disk.
    case spool
    /// `--dead-letter DIR`: what the receiver refuses is kept there (nothing, in a good row).
    case deadLetter

    /// Where `--dead-letter` keeps refused records, in the row's directory `scratch`.
    static func deadLetterDirectory(scratch: String) -> String { scratch + "/dead" }

    /// Its options; `scratch` is the row's own directory.
    func arguments(scratch: String) -> [String] {
        switch self {
        case .plain: []
        case .gzip: ["--compress", "gzip"]
        case .spool: ["--spool", scratch + "/spool"]
        case .deadLetter: ["--dead-letter", Self.deadLetterDirectory(scratch: scratch)]
        }
    }
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
    /// rather than as text, in which a byte that is not UTF-8 is U+FFFD (issue 20, item 4b:
    /// receivers that store JSON strings need valid Unicode).
    let keepsBytes: Bool

    init(
        _ preset: String?, _ server: Server, options: [String] = [], path: String = "", validatorOptions: [String] = [],
        emptyLine: EmptyLine = .kept, keepsBytes: Bool = false
    ) {
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
        MatrixTarget("otlp", .validator("otlp"), options: ["--label", "service.name=billing"]),
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

    /// Every combination of the given lists: the whole matrix by default.
    static func table(
        commands: [MatrixCommand] = MatrixCommand.allCases, targets: [MatrixTarget] = MatrixTarget.all,
        variants: [MatrixVariant] = MatrixVariant.allCases
    ) -> [MatrixRow] {
        commands.flatMap { command in
            targets.flatMap { target in variants.map { MatrixRow(command: command, target: target, variant: $0) } }
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

    /// The command line after `streamup`, for `target` at `url` and a file `log` (tail).
    func arguments(url: String, log: String, scratch: String) -> [String] {
        let options = target.arguments + variant.arguments(scratch: scratch)
        switch command {
        case .stdin: return options + [url]
        case .tail: return ["tail"] + options + [log, url]
        case .heartbeat: return ["heartbeat", "--every", "100ms"] + options + [url]
        }
    }

    /// How the row reads in the test list, as the command a user types.
    var testDescription: String {
        let words =
            [command == .stdin ? "streamup" : "streamup \(command.rawValue)"]
            + (target.preset.map { ["--to", $0] } ?? ["(sink)"])
            + variant.arguments(scratch: "DIR").map { $0.hasPrefix("DIR") ? "DIR" : $0 }
        return words.joined(separator: " ")
    }
}
