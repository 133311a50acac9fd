import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The built `streamup` binary (or another program a test needs, such as a receiver), run as a
/// child process with pipes on stdin, stdout and stderr.
///
/// Thread safety: `output`/`errorOutput` are guarded by `lock` (filled by pipe readers on
/// their own queues); the rest is used from the test's task.
public final class StreamupProcess: @unchecked Sendable {
    public let process = Process()
    private let stdinPipe = Pipe()
    private let stdoutPipe = Pipe()
    private let stderrPipe = Pipe()
    private let lock = NSCondition()
    private var stdoutBytes = Data()
    private var stderrBytes = Data()
    private var stdoutClosed = false
    private var stderrClosed = false

    /// Path of the `streamup` executable built beside the test bundle.
    public static let executable: URL = {
        let candidates = [
            Bundle.main.bundleURL.deletingLastPathComponent(), Bundle.main.bundleURL,
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
        ]
        for directory in candidates {
            let url = directory.appendingPathComponent("streamup")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        fatalError("streamup binary not found next to the tests (looked in \(candidates.map(\.path)))")
    }()

    /// What one of the child's standard descriptors is, when not the test's own pipe.
    ///
    /// Thread safety: a value type.
    public enum Attachment: Sendable, Equatable {
        /// The test's pipe (the default): stdin is written by the test, stdout and stderr are read.
        case pipe
        /// Closed before the program starts, as `<&-`, `>&-` or `2>&-` in a shell.
        case closed
        /// A pipe whose reader has exited before the program starts (`| head` after its line,
        /// a dead log collector): every write fails with EPIPE. Not for stdin.
        case readerGone
    }

    /// Starts `streamup arguments…`; stdin stays open until `closeStdin()`, unless `stdinFile`
    /// is given, which then feeds stdin. `stdin`, `stdout` and `stderr` attach a descriptor
    /// to something other than the test's pipe; output that is not a pipe reads as empty.
    public convenience init(
        _ arguments: [String], stdinFile: String? = nil,
        stdin: Attachment = .pipe, stdout: Attachment = .pipe, stderr: Attachment = .pipe
    ) throws {
        try self.init(executable: Self.executable, arguments, stdinFile: stdinFile, stdin: stdin, stdout: stdout, stderr: stderr)
    }

    /// Starts `executable arguments…` (another program a test needs), with the same pipes.
    public init(
        executable: URL, _ arguments: [String], stdinFile: String? = nil,
        stdin: Attachment = .pipe, stdout: Attachment = .pipe, stderr: Attachment = .pipe
    ) throws {
        POSIXCalls.ignoreSIGPIPE()  // a child that exits early must not kill the test runner
        // A closed descriptor needs a shell: Process cannot start a program without one.
        let closing = [(stdin, "0<&-"), (stdout, "1>&-"), (stderr, "2>&-")].compactMap { attachment, redirection in
            if case .closed = attachment { redirection } else { nil }
        }
        if closing.isEmpty {
            process.executableURL = executable
            process.arguments = arguments
        } else {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", #"exec "$0" "$@" "# + closing.joined(separator: " "), executable.path] + arguments
        }
        if let stdinFile {
            process.standardInput = FileHandle(forReadingAtPath: stdinFile)
        } else {
            process.standardInput = stdinPipe
        }
        process.standardOutput = try Self.attach(stdout, stdoutPipe)
        process.standardError = try Self.attach(stderr, stderrPipe)
        if case .readerGone = stdout { stdoutClosed = true } else { collect(stdoutPipe, isStdout: true) }
        if case .readerGone = stderr { stderrClosed = true } else { collect(stderrPipe, isStdout: false) }
        try process.run()
    }

    /// The child's end for an output: the test's pipe, or a pipe whose read end is already
    /// closed (`.readerGone`; `.closed` is done by the shell, which gets the test's pipe).
    private static func attach(_ attachment: Attachment, _ pipe: Pipe) throws -> Pipe {
        guard case .readerGone = attachment else { return pipe }
        let orphan = Pipe()
        try orphan.fileHandleForReading.close()
        return orphan
    }

    private func collect(_ pipe: Pipe, isStdout: Bool) {
        let handle = pipe.fileHandleForReading
        Thread.detachNewThread { [self] in
            while true {
                let chunk = handle.availableData
                lock.lock()
                if chunk.isEmpty {
                    if isStdout { stdoutClosed = true } else { stderrClosed = true }
                } else if isStdout {
                    stdoutBytes.append(chunk)
                } else {
                    stderrBytes.append(chunk)
                }
                lock.broadcast()
                lock.unlock()
                if chunk.isEmpty { return }
            }
        }
    }

    /// Writes `data` to the child's stdin.
    public func write(_ data: Data) {
        // Throws (rather than trapping) once the child has gone; SIGPIPE is ignored below.
        try? stdinPipe.fileHandleForWriting.write(contentsOf: data)
    }

    public func write(_ text: String) { write(Data(text.utf8)) }

    /// Ends the child's stdin (end of input).
    public func closeStdin() {
        try? stdinPipe.fileHandleForWriting.close()
    }

    /// Waits for the child to exit and both its outputs to close; returns its exit status.
    /// Fails the wait (returns nil) past `timeout` (scaled by ``TestTime``), killing the child.
    ///
    /// The wait blocks a thread of its own, never one of Swift concurrency's few cooperative
    /// threads: tests run in parallel on those, and a test blocked there for the length of a
    /// long upload would starve the others (their polls and sleeps would not run for seconds).
    public func waitForExit(timeout: TimeInterval = 60) async -> Int32? {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: self.blockingWaitForExit(timeout: timeout)) }
        }
    }

    private func blockingWaitForExit(timeout: TimeInterval) -> Int32? {
        let deadline = Date(timeIntervalSinceNow: TestTime.scaled(seconds: timeout))
        lock.lock()
        while !(stdoutClosed && stderrClosed) {
            if !lock.wait(until: deadline) {
                lock.unlock()
                process.terminate()
                return nil
            }
        }
        lock.unlock()
        process.waitUntilExit()
        return process.terminationStatus
    }

    public var stdout: String { lock.withLock { String(decoding: stdoutBytes, as: UTF8.self) } }

    /// The bytes the child wrote on stdout, exactly.
    public var stdoutData: Data { lock.withLock { stdoutBytes } }

    /// The first line the child writes on stdout (without its newline), waiting for it at most
    /// `timeout` seconds (scaled by ``TestTime``) on a thread of its own; nil if stdout ends or
    /// the time passes first.
    public func firstLine(timeout: TimeInterval = 60) async -> String? {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [self] in
                let deadline = Date(timeIntervalSinceNow: TestTime.scaled(seconds: timeout))
                lock.lock()
                while stdoutBytes.firstIndex(of: 0x0A) == nil && !stdoutClosed && lock.wait(until: deadline) {}
                let line = stdoutBytes.firstIndex(of: 0x0A).map { String(decoding: stdoutBytes[..<$0], as: UTF8.self) }
                lock.unlock()
                continuation.resume(returning: line)
            }
        }
    }
    public var stderr: String { lock.withLock { String(decoding: stderrBytes, as: UTF8.self) } }

    public func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Whether the child has ended (a server that failed to start, say).
    public var hasExited: Bool { !process.isRunning }
}
