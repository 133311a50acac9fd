import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// GNU time's report on the program it ran (`-o FILE -f 'rusage %U %S %M'`): user and system
/// CPU seconds and peak RSS in KiB, on a line of its own, after a `Command terminated by
/// signal N` line when a signal ended the program (GNU time then exits with 128 + N, which
/// alone cannot be told from an exit status, hence the line), or a `Command exited with
/// non-zero status N` line.
///
/// Thread safety: stateless.
enum RusageReport {
    static let format = "rusage %U %S %M"

    /// The program's exit as GNU time reports it, with the end time of GNU time's own exit;
    /// nil when the report is missing or unreadable.
    static func read(_ path: String, timeExit: ChildExit) -> ChildExit? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let lines = text.split(separator: "\n")
        guard let line = lines.last(where: { $0.hasPrefix("rusage ") }) else { return nil }
        let fields = line.split(separator: " ")
        guard fields.count == 4, let user = Double(fields[1]), let system = Double(fields[2]), let rss = Int(fields[3]) else {
            return nil
        }
        var status = timeExit.status
        let signalPrefix = "Command terminated by signal "
        let exitPrefix = "Command exited with non-zero status "
        if let line = lines.first(where: { $0.hasPrefix(signalPrefix) }), let signal = Int32(line.dropFirst(signalPrefix.count)) {
            status = -signal
        } else if let line = lines.first(where: { $0.hasPrefix(exitPrefix) }), let code = Int32(line.dropFirst(exitPrefix.count)) {
            status = code
        }
        return ChildExit(status: status, userSeconds: user, systemSeconds: system, maxRSSKiB: rss, endNanos: timeExit.endNanos)
    }
}
