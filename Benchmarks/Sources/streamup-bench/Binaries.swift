import Foundation

/// The executables the bench runs: the root package's release `streamup` (or the one
/// `--streamup` names), the bench itself (for ``BareUploader``), `curl`, `tail` and, when installed, `syslog-ng` from `PATH`
/// (and `/usr/sbin`, where Debian puts syslog-ng), and GNU time as `/usr/bin/time` (not the
/// shell keyword).
///
/// Thread safety: an immutable value.
struct Binaries: Sendable {
    let streamup: String
    let bench: String
    let curl: String
    let tail: String
    /// GNU time, which measures each client's own CPU and peak RSS (see ``ChildProcess``).
    let time: String
    /// nil when syslog-ng is not installed: its log-shipping column is left out, with a note.
    let syslogNG: String?
    /// nil when no `fluent-bit` is on `PATH` (nor in /usr/local/bin): its column is left out, with a note.
    let fluentBit: String?

    func path(for client: Client) -> String {
        switch client {
        case .segments, .single: streamup
        case .curl: curl
        case .bare, .barePipe, .bareSegments, .barePipeSegments: bench
        }
    }

    /// The root package's release binary: this file is Benchmarks/Sources/streamup-bench/Binaries.swift.
    static let defaultStreamup = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/release/streamup").path

    /// Finds every executable; `streamup` is the path `--streamup` gave, if any.
    static func locate(streamup: String?) throws(BenchError) -> Binaries {
        let own =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments.first ?? "."
        let streamup = streamup ?? defaultStreamup
        guard FileManager.default.isExecutableFile(atPath: streamup) else {
            throw BenchError(
                """
                no streamup binary at \(streamup).
                Build it first in the repository's root with `swift build -c release --product streamup`, or name one with --streamup PATH.
                """)
        }
        guard let curl = onPath("curl") else { throw BenchError("curl was not found on PATH; the comparison needs it") }
        guard let tail = onPath("tail") else { throw BenchError("tail was not found on PATH; the log-shipping runs need it") }
        guard let time = ["/usr/bin/time"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw BenchError(
                """
                GNU time (/usr/bin/time) was not found; it measures each client's own peak RSS.
                Install it with `apt-get install time`.
                """)
        }
        return Binaries(
            streamup: streamup, bench: own, curl: curl, tail: tail, time: time,
            syslogNG: onPath("syslog-ng", also: ["/usr/sbin"]), fluentBit: onPath("fluent-bit", also: ["/usr/local/bin"]))
    }

    /// The first executable `name` in `PATH`, then in `also`.
    private static func onPath(_ name: String, also: [String] = []) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return (path.split(separator: ":").map(String.init) + also).map { "\($0)/\(name)" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }
}
