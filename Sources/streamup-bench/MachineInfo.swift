import Foundation

/// What the report says about the machine: cores, CPU model, kernel, curl's version.
///
/// Thread safety: stateless.
enum MachineInfo {
    static func collect(curl: String) -> Report.Machine {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }
            .map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
        let kernel = ((try? String(contentsOfFile: "/proc/sys/kernel/osrelease", encoding: .utf8)) ?? "?")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return Report.Machine(
            cores: ProcessInfo.processInfo.activeProcessorCount, cpu: model, kernel: kernel,
            curlVersion: firstLine(of: curl, ["--version"]) ?? "curl (version unknown)")
    }

    /// The first line `path arguments` prints on stdout, e.g. `curl 7.88.1 (x86_64-pc-linux-gnu) …`.
    private static func firstLine(of path: String, _ arguments: [String]) -> String? {
        guard let output = try? Descriptors.pipe() else { return nil }
        guard let child = try? ChildProcess.spawn(path, arguments, stdout: .descriptor(output.write)) else {
            close(output.read)
            close(output.write)
            return nil
        }
        close(output.write)
        let reader = OutputReader(fd: output.read)
        let line = reader.firstLine(timeout: 5)
        let started = MonotonicClock.now()
        _ = child.wait { MonotonicClock.now() - started > 5_000_000_000 }
        reader.join()
        return line.map { $0.split(separator: " ").prefix(2).joined(separator: " ") }
    }
}
