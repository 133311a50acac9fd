import Foundation

/// One client streaming `bytes` from a ``PipeGenerator`` to the in-process sink.
///
/// Thread safety: an immutable value.
struct UploadResult: Sendable {
    let client: Client
    let bytes: Int
    /// From just before spawn to the child's exit (after the sink's answer).
    let seconds: Double
    let exit: ChildExit
    /// Why the run does not count, or nil when the sink got every byte and answered 200.
    let failure: String?

    var megabytesPerSecond: Double { Double(bytes) / 1e6 / seconds }
    var cpuSecondsPerGB: Double { exit.cpuSeconds / (Double(bytes) / 1e9) }
    var maxRSSMiB: Double { Double(exit.maxRSSKiB) / 1024 }
}

/// Runs one upload with a stall watchdog.
///
/// Thread safety: stateless; runs on the caller's thread (plus the generator and wait threads).
enum UploadRun {
    static func run(
        _ client: Client, binaries: Binaries, url: String, bytes: Int, stallSeconds: Double, events: SinkEvents
    ) throws(BenchError) -> UploadResult {
        let stderrFile = NSTemporaryDirectory() + "streamup-bench-\(getpid())-\(client.rawValue).stderr"
        defer { unlink(stderrFile) }
        let pipe = try Descriptors.pipe(capacity: PipeGenerator.bufferSize)
        let before = events.count
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(
                binaries.path(for: client), client.arguments(url: url),
                stdin: .descriptor(pipe.read), stderr: .file(stderrFile))
        } catch {
            close(pipe.read)
            close(pipe.write)
            throw error
        }
        close(pipe.read)
        let generator = PipeGenerator(writingTo: pipe.write, total: bytes)
        let watch = StallWatch(seconds: stallSeconds) { generator.bytesWritten }
        let (exit, killed) = child.wait(stalled: watch.isStalled)
        generator.join()
        let seconds = MonotonicClock.seconds(exit.endNanos - child.startNanos)

        var failure: String?
        if killed {
            _ = events.event(after: before, timeout: 3)  // let the aborted request's event land here, not in the next run
            failure = "stalled: no progress for \(Int(stallSeconds)) s after \(Report.bytes(generator.bytesWritten)) went into the pipe; killed"
        } else if !exit.succeeded {
            let message = (try? String(contentsOfFile: stderrFile, encoding: .utf8))?
                .split(separator: "\n").first.map(String.init) ?? ""
            failure = "exit status \(exit.status)" + (message.isEmpty ? "" : ": \(message)")
        } else if let event = events.event(after: before, timeout: 2) {
            if !event.isComplete || event.bodyByteCount != bytes || event.status != 200 {
                failure = "the sink got \(event.bodyByteCount) of \(bytes) bytes (status \(event.status))"
            }
        } else {
            failure = "the sink reported no request"
        }
        return UploadResult(client: client, bytes: bytes, seconds: seconds, exit: exit, failure: failure)
    }
}
