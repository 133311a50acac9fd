import Foundation

/// The two uploaders compared, and how each is invoked. Both send stdin as one chunked `PUT`
/// (`curl -T -` always uses PUT, so streamup gets `-X PUT`): the same work on the wire.
///
/// Thread safety: a value type.
enum Client: String, Sendable, CaseIterable {
    case streamup
    case curl

    /// The clients in the order round `round` (from 0) runs them: alternating, so slow drift of
    /// the machine does not favour one side.
    static func order(forRound round: Int) -> [Client] {
        round % 2 == 0 ? [.streamup, .curl] : [.curl, .streamup]
    }

    func arguments(url: String) -> [String] {
        switch self {
        case .streamup: ["-X", "PUT", url]
        case .curl: ["-sS", "-T", "-", url]
        }
    }

    /// The command as the report shows it.
    func displayCommand(url: String = "http://127.0.0.1:PORT/") -> String {
        ([rawValue] + arguments(url: url)).joined(separator: " ")
    }
}

/// The executables the bench runs.
///
/// Thread safety: an immutable value.
struct Binaries: Sendable {
    let streamup: String
    let curl: String

    func path(for client: Client) -> String {
        switch client {
        case .streamup: streamup
        case .curl: curl
        }
    }

    /// `streamup` from the bench's own directory (the same build), `curl` from `PATH`.
    static func locate() throws(BenchError) -> Binaries {
        let own = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments.first ?? "."
        let directory = URL(fileURLWithPath: own).deletingLastPathComponent()
        let streamup = directory.appendingPathComponent("streamup").path
        guard FileManager.default.isExecutableFile(atPath: streamup) else {
            throw BenchError("""
                no streamup binary next to the bench (\(streamup)).
                Build it first with `swift build -c release`, then run `swift run -c release streamup-bench` again.
                """)
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let curl = path.split(separator: ":").map { "\($0)/curl" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        guard let curl else { throw BenchError("curl was not found on PATH; the comparison needs it") }
        return Binaries(streamup: streamup, curl: curl)
    }
}
