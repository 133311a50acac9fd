import Foundation

/// One command-line option: its spellings, the value it takes, its help line, and what it does
/// to the options being built. One table of these drives both parsing and `--help`.
///
/// Thread safety: immutable value.
struct OptionSpec<Options>: Sendable {
    let names: [String]
    /// Shown in help as `--name VALUE`; nil for a flag.
    let valueName: String?
    let help: String
    let apply: @Sendable (inout Options, String) throws(UsageError) -> Void

    /// An option that takes a value.
    static func value(
        _ names: String..., valueName: String, help: String,
        _ apply: @escaping @Sendable (inout Options, String) throws(UsageError) -> Void
    ) -> OptionSpec {
        OptionSpec(names: names, valueName: valueName, help: help, apply: apply)
    }

    /// An option that takes no value.
    static func flag(_ names: String..., help: String, _ apply: @escaping @Sendable (inout Options) -> Void) -> OptionSpec {
        OptionSpec(names: names, valueName: nil, help: help) { options, _ in apply(&options) }
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

/// The option part of a help page, one aligned line (or more) per option.
func helpLines<Options>(for table: [OptionSpec<Options>]) -> String {
    let left = table.map { spec in
        spec.names.joined(separator: ", ") + (spec.valueName.map { " \($0)" } ?? "")
    }
    let width = min((left.map(\.count).max() ?? 0) + 2, 30)
    var text = ""
    for (label, spec) in zip(left, table) {
        let padded =
            label.count + 2 > width ? label + "\n" + String(repeating: " ", count: width + 2) : label.padding(toLength: width, withPad: " ", startingAt: 0)
        text += "  \(padded)\(spec.help)\n"
    }
    return text
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
        return OptionSpec<Outer>(names: names, valueName: valueName, help: help) { outer, value throws(UsageError) in
            try apply(&outer[keyPath: keyPath], value)
        }
    }
}
