import Foundation

/// What the report says about the machine and the tools compared: cores, CPU model, kernel,
/// curl's and syslog-ng's versions.
///
/// Thread safety: stateless.
enum MachineInfo {
    static func collect(binaries: Binaries) -> Report.Machine {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model =
            cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }
            .map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
        let kernel = ((try? String(contentsOfFile: "/proc/sys/kernel/osrelease", encoding: .utf8)) ?? "?")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let curl = output(of: binaries.curl, ["--version"]).first
            .map { $0.split(separator: " ").prefix(2).joined(separator: " ") }
        return Report.Machine(
            cores: ProcessInfo.processInfo.activeProcessorCount, cpu: model, kernel: kernel,
            curlVersion: curl ?? "curl (version unknown)",
            syslogNG: binaries.syslogNG.flatMap { SyslogNGVersion(output(of: $0, ["--version"])) },
            fluentBit: binaries.fluentBit.map { output(of: $0, ["--version"]).first ?? "Fluent Bit (version unknown)" },
            fluentBitLacks: binaries.fluentBit.flatMap { fluentBitLacks(output(of: $0, ["--help"])) })
    }

    /// What the bench needs that a `fluent-bit --help` does not list (the `tail` input, the
    /// `http` output: a build may leave plugins out), or nil.
    static func fluentBitLacks(_ help: [String]) -> String? {
        var section = ""
        var plugins: Set<String> = []
        for line in help {
            if !line.hasPrefix(" ") {
                section = line.contains("Inputs") ? "in" : line.contains("Outputs") ? "out" : ""
            } else if let name = line.split(separator: " ").first {
                plugins.insert("\(section) \(name)")
            }
        }
        let missing = [("in tail", "the tail input"), ("out http", "the http output")].filter { !plugins.contains($0.0) }.map(\.1)
        return missing.isEmpty ? nil : missing.joined(separator: " and ")
    }

    /// The lines `path arguments` prints on stdout (at most 64 KiB; within 5 s).
    static func output(of path: String, _ arguments: [String]) -> [String] {
        guard let output = try? Descriptors.pipe() else { return [] }
        guard let child = try? ChildProcess.spawn(path, arguments, stdout: .descriptor(output.write)) else {
            close(output.read)
            close(output.write)
            return []
        }
        close(output.write)
        let reader = OutputReader(fd: output.read)
        let started = MonotonicClock.now()
        _ = child.wait { MonotonicClock.now() - started > 5_000_000_000 }
        return reader.lines()
    }
}

/// syslog-ng's version, from the first line of `syslog-ng --version` (`syslog-ng 3 (3.38.1)`).
///
/// Thread safety: an immutable value.
struct SyslogNGVersion: Sendable {
    /// E.g. `3.38.1`.
    let release: String
    /// E.g. `3.38`: what the configuration file's `@version:` line names (its own version, so
    /// no compatibility mode applies).
    let configVersion: String

    init?(_ lines: [String]) {
        guard let first = lines.first, first.hasPrefix("syslog-ng"),
            let open = first.firstIndex(of: "("), let close = first.firstIndex(of: ")"), open < close
        else { return nil }
        release = String(first[first.index(after: open)..<close])
        let parts = release.split(separator: ".")
        guard parts.count >= 2 else { return nil }
        configVersion = parts.prefix(2).joined(separator: ".")
    }
}
