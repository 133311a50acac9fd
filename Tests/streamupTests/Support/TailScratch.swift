import Foundation
import StreamUpTestSupport

/// The files of one `streamup tail` test: a fresh directory holding the followed files'
/// directory (``logs``), and beside it where `--state` and `--spool` go; and the command line
/// these tests run.
///
/// Thread safety: a value type; the directory is the test's own.
struct TailScratch {
    let directory: TemporaryDirectory
    /// The directory of the followed files (created).
    let logs: String
    /// Where `--state` keeps the positions (not created).
    let state: String
    /// Where `--spool` keeps the unacknowledged bytes (not created).
    let spool: String

    /// A fresh scratch directory with `logs` (a path below it) created.
    init(logs name: String = "logs") throws {
        directory = try TemporaryDirectory()
        logs = directory.file(name)
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        state = directory.file("tail.state")
        spool = directory.file("spool")
    }

    /// `tail --from-start --segment-seconds 100ms OPTIONS PATTERN URL`: every file from its
    /// start, a segment at most every 100 ms; `pattern` is below ``logs`` (`/*.log`, `/`).
    func tail(_ options: [String] = [], _ pattern: String = "/*.log", to url: URL) -> [String] {
        ["tail", "--from-start", "--segment-seconds", "100ms"] + options + [logs + pattern, url.absoluteString]
    }
}
