import Foundation

/// What `/proc` tells about a running child, beyond ``ProcStatus``: bytes it has written with
/// system calls (`io`, `wchar`), whether it has a file open (`fd`), and its children (`stat`).
///
/// Thread safety: stateless.
enum ProcFiles {
    /// `wchar` of `/proc/PID/io`: bytes passed to `write(2)`, `send(2)` and the like so far
    /// (sockets included), or nil once the process is gone.
    static func bytesWritten(pid: pid_t) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first { $0.hasPrefix("wchar:") }
            .flatMap { Int($0.dropFirst("wchar:".count).trimmingCharacters(in: .whitespaces)) }
    }

    /// How many of `paths` the process has a descriptor open on (0 once it is gone).
    static func openCount(pid: pid_t, of paths: [String]) -> Int {
        let directory = "/proc/\(pid)/fd"
        guard let descriptors = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return 0 }
        let open = Set(descriptors.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\($0)") })
        return paths.count { open.contains($0) }
    }

    /// A child of `parent` (the first found in `/proc/*/stat`), or nil.
    static func child(of parent: pid_t) -> pid_t? {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return nil }
        for entry in entries {
            guard let pid = pid_t(entry), pid != parent,
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // After "pid (comm)": state, then the parent's pid.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, pid_t(fields[1]) == parent { return pid }
        }
        return nil
    }
}
