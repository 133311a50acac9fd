import Foundation

/// The heading an option is listed under in `--help`; headings appear in this order, and a
/// heading no option of a command uses is left out.
///
/// Thread safety: a value type.
enum OptionGroup: CaseIterable, Sendable {
    /// What is read and how it becomes lines (the input waits when the buffer is full).
    case input
    /// How lines become records and request bodies.
    case records
    /// Segments, retries, spool, endpoints, shutdown.
    case delivery
    /// Presets, headers, credentials, TLS.
    case receivers
    /// The sink's listening socket and storage.
    case server
    /// The sink's limits on clients.
    case limits
    /// The sink's faults, injected on purpose.
    case faults
    /// What streamup prints, serves and says about itself.
    case output

    var heading: String {
        switch self {
        case .input: "input"
        case .records: "records and bodies"
        case .delivery: "delivery"
        case .receivers: "receivers and requests"
        case .server: "server"
        case .limits: "limits on clients"
        case .faults: "faults (for testing a client)"
        case .output: "output"
        }
    }
}

/// One command-line option: its spellings, the value it takes, where and how `--help` lists
/// it, and what it does to the options being built. One table of these drives both parsing and
/// `--help`, so an option is added in one place.
///
/// Thread safety: immutable value.
struct OptionSpec<Options>: Sendable {
    let names: [String]
    /// Shown in help as `--name VALUE`; nil for a flag.
    let valueName: String?
    let group: OptionGroup
    /// One short line; `--help` wraps it within ``HelpLayout/width`` columns. Details go to a
    /// `streamup help TOPIC` (HelpTopic.swift).
    let help: String
    let apply: @Sendable (inout Options, String) throws(UsageError) -> Void

    /// An option that takes a value.
    static func value(
        _ names: String..., valueName: String, group: OptionGroup, help: String,
        _ apply: @escaping @Sendable (inout Options, String) throws(UsageError) -> Void
    ) -> OptionSpec {
        OptionSpec(names: names, valueName: valueName, group: group, help: help, apply: apply)
    }

    /// An option that takes no value.
    static func flag(
        _ names: String..., group: OptionGroup, help: String, _ apply: @escaping @Sendable (inout Options) -> Void
    ) -> OptionSpec {
        OptionSpec(names: names, valueName: nil, group: group, help: help) { options, _ in apply(&options) }
    }

    /// `-h, --help` and `-V, --version`, which every command lists (the parser answers them
    /// before the table is walked).
    static var helpAndVersion: [OptionSpec] {
        [
            .flag("-h", "--help", group: .output, help: "show this help") { _ in },
            .flag("-V", "--version", group: .output, help: "print streamup's version") { _ in },
        ]
    }
}

/// Walks `arguments` with `table`: options (`--name value`, `--name=value`, `-H value`) go
/// through the table, everything else is returned as positional arguments in order. `--` ends
/// the options; what follows it is returned separately.
func parseOptions<Options>(
    _ arguments: [String], table: [OptionSpec<Options>], into options: inout Options
) throws(UsageError) -> (positional: [String], afterDoubleDash: [String]?) {
    var positional: [String] = []
    var index = 0
    while index < arguments.count {
        let argument = arguments[index]
        index += 1
        if argument == "--" {
            return (positional, Array(arguments[index...]))
        }
        guard argument.hasPrefix("-"), argument != "-" else {
            positional.append(argument)
            continue
        }
        var name = argument
        var inlineValue: String?
        if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
            name = String(argument[..<equals])
            inlineValue = String(argument[argument.index(after: equals)...])
        }
        guard let spec = table.first(where: { $0.names.contains(name) }) else {
            throw UsageError("unknown option '\(name)' (see --help)")
        }
        if spec.valueName == nil {
            if inlineValue != nil { throw UsageError("option '\(name)' takes no value") }
            try spec.apply(&options, "")
            continue
        }
        let value: String
        if let inlineValue {
            value = inlineValue
        } else {
            guard index < arguments.count else { throw UsageError("option '\(name)' needs a value (\(spec.valueName!))") }
            value = arguments[index]
            index += 1
        }
        try spec.apply(&options, value)
    }
    return (positional, nil)
}

/// The option part of a help page: each group under its heading, one aligned entry per
/// option, every line within ``HelpLayout/width`` columns. An entry with an empty help is not
/// listed: another entry names its option.
func helpLines<Options>(for table: [OptionSpec<Options>]) -> String {
    var text = ""
    for group in OptionGroup.allCases {
        let specs = table.filter { $0.group == group && !$0.help.isEmpty }
        guard !specs.isEmpty else { continue }
        text += (text.isEmpty ? "" : "\n") + group.heading + ":\n"
        for spec in specs {
            let label = "  " + spec.names.joined(separator: ", ") + (spec.valueName.map { " \($0)" } ?? "")
            text += HelpLayout.entry(label: label, text: spec.help)
        }
    }
    return text
}

/// How help text is laid out on a terminal.
///
/// Thread safety: stateless.
enum HelpLayout {
    /// The widest line of any help text.
    static let width = 100
    /// The column an option's description starts at.
    static let descriptionColumn = 30

    /// `label` with `text` beside it from ``descriptionColumn`` (below it when the label is too
    /// long), wrapped at word boundaries within ``width``.
    static func entry(label: String, text: String) -> String {
        let indent = String(repeating: " ", count: descriptionColumn)
        let lines = wrap(text, within: width - descriptionColumn)
        var result = ""
        if label.count + 2 > descriptionColumn {
            result = label + "\n" + lines.map { indent + $0 + "\n" }.joined()
        } else {
            result = label.padding(toLength: descriptionColumn, withPad: " ", startingAt: 0) + (lines.first ?? "") + "\n"
            result += lines.dropFirst().map { indent + $0 + "\n" }.joined()
        }
        return result
    }

    /// `text` broken into lines of at most `width` characters at spaces (a longer word stands
    /// alone on its line).
    static func wrap(_ text: String, within width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if line.isEmpty {
                line = String(word)
            } else if line.count + 1 + word.count <= width {
                line += " " + word
            } else {
                lines.append(line)
                line = String(word)
            }
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }
}

// MARK: - Value parsers shared by the commands

/// Parses a byte size like `65536`, `64k`, `64KiB`, `1m`, `2MiB`, `1g`.
func parseByteSize(_ text: String, option: String) throws(UsageError) -> Int {
    let lower = text.lowercased()
    let units: [(String, Int)] = [
        ("kib", 1 << 10), ("mib", 1 << 20), ("gib", 1 << 30), ("kb", 1000), ("mb", 1_000_000), ("gb", 1_000_000_000),
        ("k", 1 << 10), ("m", 1 << 20), ("g", 1 << 30), ("b", 1),
    ]
    var number = lower
    var multiplier = 1
    for (suffix, value) in units where lower.hasSuffix(suffix) {
        number = String(lower.dropLast(suffix.count))
        multiplier = value
        break
    }
    guard let count = Int(number), count > 0, count <= Int.max / multiplier else {
        throw UsageError("\(option): '\(text)' is not a size (examples: 65536, 64k, 1MiB)")
    }
    return count * multiplier
}

/// `count` bytes as `parseByteSize` reads them back: `8MiB`, `512KiB`, or a number of bytes.
func byteText(_ count: Int) -> String {
    for (unit, size) in [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] where count >= size && count % size == 0 {
        return "\(count / size)\(unit)"
    }
    return "\(count)"
}

/// Parses a duration like `500ms`, `0.2s`, `10s`, `5m`, `1h` (a bare number means seconds).
func parseDuration(_ text: String, option: String) throws(UsageError) -> Duration {
    let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
    var number = text
    var scale = 1.0
    for (suffix, value) in units where text.hasSuffix(suffix) {
        number = String(text.dropLast(suffix.count))
        scale = value
        break
    }
    guard let value = Double(number), value.isFinite, value > 0, value * scale < 1e9 else {
        throw UsageError("\(option): '\(text)' is not a positive duration (examples: 500ms, 0.2s, 10s, 5m)")
    }
    return .milliseconds(Int64((value * scale * 1000).rounded()))
}

extension OptionSpec {
    /// The same option, applied to the `Options` stored at `keyPath` inside a larger value, so
    /// commands can share option tables.
    func lifted<Outer>(_ keyPath: WritableKeyPath<Outer, Options> & Sendable) -> OptionSpec<Outer> {
        let apply = self.apply
        return OptionSpec<Outer>(names: names, valueName: valueName, group: group, help: help) { outer, value throws(UsageError) in
            try apply(&outer[keyPath: keyPath], value)
        }
    }
}
