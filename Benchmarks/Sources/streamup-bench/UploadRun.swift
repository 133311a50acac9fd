import Foundation

/// One client streaming `bytes` to the in-process sink.
///
/// Thread safety: an immutable value.
struct UploadResult: Sendable {
    let client: Client
    let bytes: Int
    /// From just before spawn to the child's exit (after the sink's answer).
    let seconds: Double
    let exit: ChildExit
    /// Requests the sink received for the stream (1 for a single request).
    let requests: Int
    /// Why the run does not count, or nil when the sink got every byte once, all answered 200.
    let failure: String?

    var megabytesPerSecond: Double { Double(bytes) / 1e6 / seconds }
    var cpuSecondsPerGB: Double { exit.cpuSeconds / (Double(bytes) / 1e9) }
    var maxRSSMiB: Double { Double(exit.maxRSSKiB) / 1024 }
}

/// Runs one upload with a stall watchdog: a client that reads stdin gets it from a
/// ``PipeGenerator`` (progress: bytes into the pipe); the bare uploader makes its own bytes
/// (progress: bytes it has written, `/proc/PID/io`).
///
/// Thread safety: stateless; runs on the caller's thread (plus the generator and wait threads).
enum UploadRun {
    static func run(
        _ client: Client, binaries: Binaries, url: String, bytes: Int, stallSeconds: Double, events: SinkEvents
    ) throws(BenchError) -> UploadResult {
        let outcome = try upload(
            binaries.path(for: client), client.arguments(url: url, bytes: String(bytes)), name: client.rawValue,
            readsStdin: client.readsStdin, time: binaries.time, bytes: bytes, stallSeconds: stallSeconds, events: events)
        return UploadResult(
            client: client, bytes: bytes, seconds: outcome.seconds, exit: outcome.exit, requests: outcome.requests,
            failure: outcome.failure)
    }

    /// What one upload came to: ``UploadResult`` without the client.
    ///
    /// Thread safety: an immutable value.
    struct Outcome: Sendable {
        let seconds: Double
        let exit: ChildExit
        let requests: Int
        let failure: String?
    }

    /// Runs `program arguments` (measured by GNU `time`) sending `bytes` to the sink whose
    /// events are `events`, from a pipe on its stdin when `readsStdin`.
    static func upload(
        _ program: String, _ arguments: [String], name: String, readsStdin: Bool, time: String, bytes: Int,
        stallSeconds: Double, events: SinkEvents
    ) throws(BenchError) -> Outcome {
        let stderrFile = NSTemporaryDirectory() + "streamup-bench-\(getpid())-\(name).stderr"
        defer { unlink(stderrFile) }
        let pipe = readsStdin ? try Descriptors.pipe(capacity: PipeGenerator.bufferSize) : nil
        let before = events.count
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(
                program, arguments, stdin: pipe.map { .descriptor($0.read) } ?? .file("/dev/null"),
                stderr: .file(stderrFile), measuredBy: time)
        } catch {
            if let pipe {
                close(pipe.read)
                close(pipe.write)
            }
            throw error
        }
        var generator: PipeGenerator?
        if let pipe {
            close(pipe.read)
            generator = PipeGenerator(writingTo: pipe.write, total: bytes)
        }
        let pid = child.pid
        let watch = StallWatch(seconds: stallSeconds) {
            generator?.bytesWritten ?? ProcFiles.bytesWritten(pid: pid) ?? 0
        }
        let (exit, killed) = child.wait(stalled: watch.isStalled)
        generator?.join()
        let seconds = MonotonicClock.seconds(exit.endNanos - child.startNanos)

        var failure: String?
        var requests = 0
        if killed {
            _ = events.event(after: before, timeout: 3)  // let the aborted request's event land here, not in the next run
            let progress = generator.map { "after \(Report.bytes($0.bytesWritten)) went into the pipe" } ?? "(bytes it wrote stopped growing)"
            failure = "stalled: no progress for \(Int(stallSeconds)) s \(progress); killed"
        } else if !exit.succeeded {
            let message =
                (try? String(contentsOfFile: stderrFile, encoding: .utf8))?
                .split(separator: "\n").first.map(String.init) ?? ""
            failure = "exit status \(exit.status)" + (message.isEmpty ? "" : ": \(message)")
        } else {
            let received = events.events(after: before, totalling: bytes, timeout: 2)
            requests = received.count
            let total = received.reduce(0) { $0 + $1.bodyByteCount }
            if received.isEmpty {
                failure = "the sink reported no request"
            } else if let bad = received.first(where: { !$0.isComplete || $0.status != 200 }) {
                failure = "a request to the sink ended with status \(bad.status)\(bad.isComplete ? "" : ", incomplete")\(bad.failure.map { ": \($0)" } ?? "")"
            } else if total != bytes {
                failure = "the sink got \(total) of \(bytes) bytes in \(received.count) request\(received.count == 1 ? "" : "s")"
            }
        }
        return Outcome(seconds: seconds, exit: exit, requests: requests, failure: failure)
    }
}
