import Foundation
import StreamUp

/// How lines become records: the CLI side of ``RecordFormatter``.
///
/// Thread safety: a value type.
struct RecordOptions: Sendable, Equatable {
    var format: RecordFormat = .raw
    /// `--format FORMAT,surrogateescape`: bytes that are not UTF-8 as `\udcXX` (default U+FFFD).
    var invalidUTF8: RecordFormatter.InvalidUTF8 = .replace
    var fields: [(String, String)] = []
    var keys = RecordFormatter.Keys()
    /// `--to NAME` and `--label`s (ReceiverOptions.swift).
    var receiver: Receiver?
    var labels: [(String, String)] = []
    /// The record options given on the command line (a preset's values give way to them).
    var given: Set<String> = []
    /// `--multiline`, `--multiline-timeout`, `--multiline-max-lines`: how lines join into
    /// records (nil kind: a record per line).
    var multilineKind: MultilineRule.Kind?
    var multilineTimeout: Duration?
    var multilineMaxLines: Int?
    /// `--parse cri|docker`: lines are a container runtime's (nil: lines are the messages).
    var parse: ContainerLogFormat?
    /// `--drop`, `--keep`, `--redact` (with `--redact-with`), in the order given, compiled (nil:
    /// none).
    var filter: RecordFilter?

    /// The multiline rule the options give; nil without `--multiline`.
    var multiline: MultilineRule? {
        guard let multilineKind else { return nil }
        var rule = MultilineRule(multilineKind)
        if let multilineTimeout { rule.timeout = multilineTimeout }
        if let multilineMaxLines { rule.maxLines = multilineMaxLines }
        return rule
    }

    static func == (lhs: RecordOptions, rhs: RecordOptions) -> Bool {
        lhs.format == rhs.format && lhs.invalidUTF8 == rhs.invalidUTF8 && lhs.keys == rhs.keys && lhs.fields.elementsEqual(rhs.fields) { $0 == $1 }
            && lhs.receiver == rhs.receiver && lhs.labels.elementsEqual(rhs.labels) { $0 == $1 } && lhs.given == rhs.given
            && lhs.multiline == rhs.multiline && lhs.multilineTimeout == rhs.multilineTimeout && lhs.multilineMaxLines == rhs.multilineMaxLines
            && lhs.parse == rhs.parse && lhs.filter == rhs.filter
    }

    /// Adds `rule` after the ones given before it.
    mutating func addFilterRule(_ rule: RecordFilter.Rule) throws(UsageError) {
        try makeFilter((filter?.rules ?? []) + [rule])
    }

    /// `--redact-with TEMPLATE`: the template of the `--redact` given last, which must have none
    /// yet (a template follows its pattern, so neither is ever read as part of the other).
    mutating func setRedactionTemplate(_ template: String) throws(UsageError) {
        guard var rules = filter?.rules, case .redact(let pattern, nil)? = rules.last else {
            throw UsageError("--redact-with '\(template)' must follow the --redact whose matches it replaces: --redact 'PATTERN' --redact-with 'TEMPLATE'")
        }
        rules[rules.count - 1] = .redact(pattern, template: template)
        try makeFilter(rules)
    }

    private mutating func makeFilter(_ rules: [RecordFilter.Rule]) throws(UsageError) {
        do {
            filter = try RecordFilter(rules)
        } catch {
            throw UsageError(error.context)
        }
    }

    /// The format records get: the one given, else the receiver's, else raw.
    var effectiveFormat: RecordFormat {
        if given.contains("--format") { return format }
        return receiver?.format ?? format
    }

    /// The record keys: the receiver's, with the message and time keys given explicitly.
    var effectiveKeys: RecordFormatter.Keys {
        guard let receiver else { return keys }
        var effective = receiver.keys
        if given.contains("--message-key") { effective.message = keys.message }
        if given.contains("--time-key") { effective.time = keys.time }
        return effective
    }

    /// The formatter for records read at `path` (nil for stdin), or nil for raw lines: the
    /// receiver's format, keys and record limit with the options given explicitly winning
    /// (`maxRecordBytes` is `--max-record`); `extra` fields (a container's) come first; `host`
    /// is the record's host (nil: this machine's); `severity`: how severe the records are, where
    /// the input says (a journal entry's priority).
    func formatter(
        path: String? = nil, maxRecordBytes: Int?, extra: [(name: String, value: String)] = [], host: String? = nil,
        severity: RecordSeverity? = nil
    ) throws -> RecordFormatter? {
        let host = host ?? RecordFormatter.localHostName()
        guard effectiveFormat != .raw else { return nil }
        let fields = extra + fields.map { (name: $0.0, value: $0.1) }
        if let receiver {
            return try receiver.formatter(
                format: effectiveFormat, keys: effectiveKeys, host: host, path: path, fields: fields, labels: labels.map { (name: $0.0, value: $0.1) },
                maxRecordBytes: maxRecordBytes, invalidUTF8: invalidUTF8, severity: severity)
        }
        return try RecordFormatter(
            format: format, keys: keys, host: host, path: path, fields: fields, maxRecordBytes: maxRecordBytes ?? 1 << 20, invalidUTF8: invalidUTF8)
    }
}

/// The records every command sends (`streamup` from stdin, `tail`, `heartbeat`) come from
/// here alone: the preset's settings with the options given explicitly.
extension UploadOptions {
    /// The formatter for lines read at `path` (nil: stdin or beats), or nil for raw lines.
    /// - Throws: ``StreamUpError`` for keys or fields that collide, or a `--max-record` too
    ///   small for the record's other fields.
    func recordFormatter(path: String? = nil) throws -> RecordFormatter? {
        try records.formatter(path: path, maxRecordBytes: delivery.maxRecordBytes)
    }

    /// The formatter for records of joined lines (`--multiline`) or container messages
    /// (`--parse`, with the container's `extra` fields), or journal entries (from `host`, as
    /// severe as `severity`): the record formatter, or for raw lines one that keeps them as they
    /// are, cut at `--max-record`.
    func multilineFormatter(
        path: String? = nil, extra: [(name: String, value: String)] = [], host: String? = nil, severity: RecordSeverity? = nil
    ) throws -> RecordFormatter {
        if let formatter = try records.formatter(path: path, maxRecordBytes: delivery.maxRecordBytes, extra: extra, host: host, severity: severity) {
            return formatter
        }
        return try RecordFormatter(format: .raw, maxRecordBytes: delivery.maxRecordBytes ?? 1 << 20)
    }

    /// The longest record the upload keeps whole: a formatted record and its `\n`, or a raw
    /// line of `--max-record` (1 MiB); longer raw lines are cut there.
    var maxRecordBytes: Int {
        guard records.effectiveFormat != .raw else { return delivery.maxRecordBytes ?? 1 << 20 }
        return (delivery.maxRecordBytes ?? records.receiver?.limits.maxRecordBytes ?? 1 << 20) + 1
    }
}
