import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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

/// The lines the sink stored, by file (the first word of each line: `f07 line 3` is f07's),
/// taking the streams in the order their first request arrived.
func storedLines(in directory: URL, _ sink: SinkServer) -> [String: [String]] {
    var streams: [String] = []
    for request in sink.requests {
        if let file = request.storedFile, file.contains("/stream-"), !streams.contains(file) { streams.append(file) }
    }
    var lines: [String: [String]] = [:]
    for stream in streams {
        guard let text = try? String(contentsOfFile: stream, encoding: .utf8) else { continue }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
            let file = line.split(separator: " ", maxSplits: 1).first.map(String.init) ?? ""
            lines[file, default: []].append(String(line))
        }
    }
    return lines
}

/// Files `f00.log`, `f01.log`, … in one directory, and the lines written to each.
///
/// Thread safety: a value type used from the test's task.
struct ManyFiles {
    let directory: String
    private(set) var expected: [String: [String]] = [:]
    private var names: [String]

    init(directory: String, count: Int) {
        self.directory = directory
        names = (0..<count).map { String(format: "f%02d", $0) }
    }

    func path(_ name: String) -> String { "\(directory)/\(name).log" }

    /// One more line to every file still written to.
    mutating func appendToAll() throws {
        for name in names { try append(name, lines: 1) }
    }

    /// `count` more lines of `name`, to its file (or to `path`, such as its rotated name).
    mutating func append(_ name: String, lines count: Int, at path: String? = nil) throws {
        if !names.contains(name) { names.append(name) }
        var text = ""
        for _ in 0..<count {
            let line = "\(name) line \(expected[name, default: []].count) \(String(repeating: "x", count: expected.count % 7))"
            expected[name, default: []].append(line)
            text += line + "\n"
        }
        try streamupTests.append(text, to: path ?? self.path(name), creating: true)
    }

    /// No more lines to `name` (deleted).
    mutating func retire(_ name: String) {
        names.removeAll { $0 == name }
    }

    /// logrotate's copytruncate of `name` (``copytruncate(_:)``) right after a line that
    /// streamup, stopped with SIGSTOP meanwhile, has not read; then a line to every file.
    mutating func copytruncateUnread(_ name: String, while child: StreamupProcess) throws {
        child.signal(SIGSTOP)
        try appendToAll()
        try copytruncate(path(name))
        child.signal(SIGCONT)
        try appendToAll()
    }

    /// Stops `child` with SIGTERM: it exits 0, and the sink holds exactly the lines written.
    func expectStoredAfterStopping(
        _ child: StreamupProcess, in stored: URL, _ sink: SinkServer, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        child.signal(SIGTERM)
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)", sourceLocation: sourceLocation)
        let lines = storedLines(in: stored, sink)
        #expect(lines == expected, "stored: \(lines)", sourceLocation: sourceLocation)
    }

    /// Waits until the sink holds exactly the lines written so far.
    func expectStored(in stored: URL, _ child: StreamupProcess, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let lines = { (try? String(contentsOfFile: streamFile(in: stored) ?? "", encoding: .utf8)) ?? "" }
        let expected = self.expected
        let arrived = await eventually(within: .seconds(30)) {
            var byFile: [String: [String]] = [:]
            for line in lines().split(separator: "\n") {
                byFile[String(line.split(separator: " ").first ?? ""), default: []].append(String(line))
            }
            return byFile == expected
        }
        #expect(arrived, "stored:\n\(lines())\nstderr: \(child.stderr)", sourceLocation: sourceLocation)
    }
}

/// Appends `text` to `path`, creating the file if needed.
func append(_ text: String, to path: String, creating: Bool) throws {
    let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    defer { close(fd) }
    let bytes = Array(text.utf8)
    guard bytes.withUnsafeBytes({ POSIXCalls.write(fd, $0.baseAddress, $0.count) }) == bytes.count else { throw POSIXError(.EIO) }
}

/// logrotate's `copytruncate` with `rotate 2`, with the real `cp` and `truncate`: `PATH.1`
/// becomes `PATH.2` (the oldest copy goes), `PATH` is copied to `PATH.1`, then truncated.
func copytruncate(_ path: String) throws {
    if FileManager.default.fileExists(atPath: path + ".1") {
        try? FileManager.default.removeItem(atPath: path + ".2")
        try FileManager.default.moveItem(atPath: path + ".1", toPath: path + ".2")
    }
    try run("/bin/cp", path, path + ".1")
    try run("/usr/bin/truncate", "-s", "0", path)
}

/// Runs a command to its end; throws when it fails.
func run(_ command: String, _ arguments: String...) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: command)
    process.arguments = arguments
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw POSIXError(.EIO) }
}

extension StreamupProcess {
    /// Whether ``asNobody(_:)`` can run: as root, with util-linux's `setpriv`.
    static var canRunAsNobody: Bool { geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") }

    /// `streamup arguments…` as the user `nobody` (through `setpriv`, since root reads and
    /// writes anywhere): for files and directories streamup may not use.
    static func asNobody(_ arguments: [String]) throws -> StreamupProcess {
        try StreamupProcess(
            executable: URL(fileURLWithPath: "/usr/bin/setpriv"),
            ["--reuid=65534", "--regid=65534", "--clear-groups", "--", StreamupProcess.executable.path] + arguments)
    }
}
