import Foundation

/// Turns ``Results`` into one Markdown section for Benchmarks/RESULTS.md (README.md's
/// "Performance" summarises it): the machine, the exact command, then per workload what is
/// measured, the commands compared, and a table of medians with min–max over the rounds and
/// ratios of the medians.
///
/// Thread safety: stateless.
enum Report {
    struct Machine: Sendable {
        var cores: Int
        var cpu: String
        var kernel: String
        var curlVersion: String
        var syslogNG: SyslogNGVersion?
        /// `Fluent Bit v5.1.0`, or nil when it is not installed.
        var fluentBit: String?
        /// The plugins the installed Fluent Bit was built without, of those the bench needs.
        var fluentBitLacks: String?
    }

    static func render(_ results: Results, options: BenchOptions, arguments: [String], machine: Machine) -> String {
        var lines: [String] = []
        let date = Date().formatted(.iso8601.year().month().day())
        let syslogNG = machine.syslogNG.map { "syslog-ng \($0.release)" } ?? "syslog-ng not installed"
        let fluentBit = machine.fluentBit ?? "no Fluent Bit"
        lines.append("### Measured \(date)")
        lines.append("")
        lines.append("- Machine: \(machine.cores) cores (\(machine.cpu)), Linux \(machine.kernel), \(machine.curlVersion), \(syslogNG), \(fluentBit).")
        lines.append(
            "- Run: `swift build -c release --static-swift-stdlib --product streamup && cd Benchmarks && swift run -c release streamup-bench\(arguments.isEmpty ? "" : " " + arguments.joined(separator: " "))`; \(options.rounds) round\(options.rounds == 1 ? "" : "s"); in each, every step runs its clients one after another, in the order of the table's columns in odd rounds and reversed in even ones; cells are the median (min–max) over the rounds; ratios are of the medians; total \(Int(results.elapsedSeconds.rounded())) s."
        )
        lines.append(
            "- Sink: `SinkServer` in the bench process on 127.0.0.1, port 0, `hashBodies: false`, no output directory; every run checks what it received (below)."
        )
        lines.append(
            "- CPU (user+sys, in 10 ms steps) and peak RSS of a client are its own, as GNU time (`/usr/bin/time -f '\(RusageReport.format)'`) reports them for the program it forks: a child started straight from the bench would report the bench's own peak RSS if larger (Linux keeps the old address space's high-water mark across `execve`). Time is from just before `posix_spawn` to the exit."
        )
        lines.append(
            "- A run whose progress stops for \(Int(options.stallSeconds)) s is killed and counted in the table's last row and listed under it, not in the medians."
        )
        lines.append("")
        switch options.only {
        case .lateAnswers:
            lines += lateAnswerSection(results, options: options)
            return lines.joined(separator: "\n")
        case .pipe:
            lines += pipeSection(results, options: options)
            return lines.joined(separator: "\n")
        case .logShipping:
            lines += Benchmark.shippingFileCounts.flatMap { files in
                shippingSection(results, options: options, machine: machine, files: files) + [""]
            }
            return lines.joined(separator: "\n")
        case nil:
            lines += pipeSection(results, options: options)
        }
        lines.append("")
        lines += lateAnswerSection(results, options: options)
        lines.append("")
        lines += latencySection(results, options: options)
        lines.append("")
        lines += sinkSection(results, options: options)
        lines.append("")
        lines += waitSection(results, options: options)
        if options.shipping {
            for files in Benchmark.shippingFileCounts {
                lines.append("")
                lines += shippingSection(results, options: options, machine: machine, files: files)
            }
        }
        lines.append("")
        lines += costSection(results, options: options)
        return lines.joined(separator: "\n")
    }

    /// The notes and failed runs of some columns, as lists under a table.
    static func notesAndFailures(_ entries: [(name: String, notes: [String], failures: [String])]) -> [String] {
        var lines: [String] = []
        let notes = entries.flatMap { entry in entry.notes.map { "\(entry.name): \($0)" } }
        let failures = entries.flatMap { entry in entry.failures.map { "\(entry.name): \($0)" } }
        if !notes.isEmpty {
            lines.append("")
            lines.append("Left out:")
            lines += notes.map { "- \($0)" }
        }
        if !failures.isEmpty {
            lines.append("")
            lines.append("Runs that did not count:")
            lines += failures.map { "- \($0)" }
        }
        return lines
    }

    /// `median (min–max)`, or `—` without values.
    static func cell(_ summary: Summary?, digits: Int) -> String {
        guard let summary else { return "—" }
        if summary.count == 1 || summary.min == summary.max { return number(summary.median, digits: digits) }
        return "\(number(summary.median, digits: digits)) (\(number(summary.min, digits: digits))–\(number(summary.max, digits: digits)))"
    }

    static func number(_ value: Double, digits: Int = 0) -> String {
        String(format: "%.\(digits)f", value)
    }

    /// `2 GB`, `256 MB`, `655 kB` (decimal units).
    static func bytes(_ count: Int) -> String {
        let value = Double(count)
        if value >= 1e9 { return "\(trimmed(value / 1e9)) GB" }
        if value >= 1e6 { return "\(trimmed(value / 1e6)) MB" }
        if value >= 1e3 { return "\(trimmed(value / 1e3)) kB" }
        return "\(count) B"
    }

    /// `10,000`.
    static func grouped(_ value: Int) -> String {
        value.formatted(.number.grouping(.automatic))
    }

    /// `met` / `NOT met` / `no data` for a target on two medians.
    static func verdict(_ value: Double?, _ passes: (Double) -> Bool) -> String {
        guard let value else { return "no data" }
        return passes(value) ? "met" : "**not met**"
    }

    private static func trimmed(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
    }
}
