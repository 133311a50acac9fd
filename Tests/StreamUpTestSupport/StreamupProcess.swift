import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The built `streamup` binary (or another program a test needs, such as a receiver), run as a
/// child process with pipes on stdin, stdout and stderr.
///
/// A child never outlives its test: when the test lets go of this object on any path (it
/// returned, an expectation threw, it timed out), a child still running is killed with its
/// descendants (the jobs and servers it started), and so is one that outlasts
/// ``waitForExit(timeout:)``. The pipe readers hold only ``Output``, never this object, so
/// nothing but the test keeps it alive.
///
/// Thread safety: the collected output is guarded by `Output`'s lock (filled by pipe readers
/// on threads of their own); the rest is used from the test's task.
public final class StreamupProcess: @unchecked Sendable {
    public let process = Process()
    private let stdinPipe = Pipe()
    private let stdoutPipe = Pipe()
    private let stderrPipe = Pipe()
    private let output = Output()

    /// What the child wrote so far and whether each output has ended.
    ///
    /// Thread safety: every field is guarded by `lock`, which readers wait on.
    private final class Output: @unchecked Sendable {
        let lock = NSCondition()
        var stdoutBytes = Data()
        var stderrBytes = Data()
        var stdoutClosed = false
        var stderrClosed = false
    }

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
        if case .readerGone = stdout { output.stdoutClosed = true } else { collect(stdoutPipe, isStdout: true) }
        if case .readerGone = stderr { output.stderrClosed = true } else { collect(stderrPipe, isStdout: false) }
        try process.run()
    }

    deinit {
        end()
    }

    /// Kills the child and every process under it (Foundation starts each child in a process
    /// group of its own, so a group is not enough: `heartbeat -- COMMAND`'s command has its own)
    /// if it still runs, and reaps it.
    private func end() {
        guard process.isRunning else { return }
        let pid = process.processIdentifier
        for each in [pid] + Self.descendants(of: pid) { _ = kill(each, SIGKILL) }
        process.waitUntilExit()
    }

    /// The processes under `pid`, children first, read from `/proc/PID/task/TID/children`.
    private static func descendants(of pid: Int32) -> [Int32] {
        var found: [Int32] = []
        var next = [pid]
        while let parent = next.popLast() {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(parent)/task")) ?? []
            for task in tasks {
                let text = (try? String(contentsOfFile: "/proc/\(parent)/task/\(task)/children", encoding: .utf8)) ?? ""
                let children = text.split(separator: " ").compactMap { Int32($0) }
                found += children
                next += children
            }
        }
        return found
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
        Thread.detachNewThread { [output] in
            while true {
                let chunk = handle.availableData
                output.lock.lock()
                if chunk.isEmpty {
                    if isStdout { output.stdoutClosed = true } else { output.stderrClosed = true }
                } else if isStdout {
                    output.stdoutBytes.append(chunk)
                } else {
                    output.stderrBytes.append(chunk)
                }
                output.lock.broadcast()
                output.lock.unlock()
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
        output.lock.lock()
        while !(output.stdoutClosed && output.stderrClosed) {
            if !output.lock.wait(until: deadline) {
                output.lock.unlock()
                end()
                return nil
            }
        }
        output.lock.unlock()
        process.waitUntilExit()
        return process.terminationStatus
    }

    public var stdout: String { output.lock.withLock { String(decoding: output.stdoutBytes, as: UTF8.self) } }

    /// The bytes the child wrote on stdout, exactly.
    public var stdoutData: Data { output.lock.withLock { output.stdoutBytes } }

    /// The first line the child writes on stdout (without its newline), waiting for it at most
    /// `timeout` seconds (scaled by ``TestTime``) on a thread of its own; nil if stdout ends or
    /// the time passes first.
    public func firstLine(timeout: TimeInterval = 60) async -> String? {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [output] in
                let deadline = Date(timeIntervalSinceNow: TestTime.scaled(seconds: timeout))
                output.lock.lock()
                while output.stdoutBytes.firstIndex(of: 0x0A) == nil && !output.stdoutClosed && output.lock.wait(until: deadline) {}
                let line = output.stdoutBytes.firstIndex(of: 0x0A).map { String(decoding: output.stdoutBytes[..<$0], as: UTF8.self) }
                output.lock.unlock()
                continuation.resume(returning: line)
            }
        }
    }
    public var stderr: String { output.lock.withLock { String(decoding: output.stderrBytes, as: UTF8.self) } }

    public func signal(_ number: Int32) { _ = kill(process.processIdentifier, number) }

    /// Whether the child has ended (a server that failed to start, say).
    public var hasExited: Bool { !process.isRunning }
}
