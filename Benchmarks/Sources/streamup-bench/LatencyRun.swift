import Foundation

/// One latency run: lines at a steady rate through one client into a ``LineReceiver``.
///
/// Thread safety: an immutable value.
struct LatencyResult: Sendable {
    let client: Client
    let rate: Int
    let sent: Int
    /// Per-line latencies in ns, ascending.
    let latencies: [UInt64]
    /// From just before spawn to the first body byte at the receiver, in ns (nil if none came).
    let firstByteNanos: UInt64?
    let failure: String?

    func percentileMilliseconds(_ p: Double) -> Double? {
        latencies.isEmpty ? nil : Double(Statistics.percentile(sorted: latencies, p)) / 1e6
    }

    var maxMilliseconds: Double? { latencies.last.map { Double($0) / 1e6 } }
}

/// Runs a client against the bench's own receiver and times every line.
///
/// Order: the warm-up line goes into the pipe before spawn (so "first byte" measures the
/// client's start-up, connect and first send), timed lines start once that first byte has
/// arrived, and after the last line stdin is closed and the client must end the body.
///
/// Thread safety: stateless; runs on the caller's thread (plus receiver and wait threads).
enum LatencyRun {
    static func run(
        _ client: Client, binaries: Binaries, rate: Int, seconds: Double, stallSeconds: Double
    ) throws(BenchError) -> LatencyResult {
        let receiver = try LineReceiver()
        let url = "http://127.0.0.1:\(receiver.port)/"
        let pipe = try Descriptors.pipe()
        let warmUp = Array(LineSender.warmUpLine.utf8)
        _ = warmUp.withUnsafeBytes { Descriptors.writeAll(pipe.write, $0) }
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(binaries.path(for: client), client.latencyArguments(url: url), stdin: .descriptor(pipe.read))
        } catch {
            close(pipe.read)
            close(pipe.write)
            _ = receiver.finish(graceSeconds: 0)
            throw error
        }
        close(pipe.read)

        let firstByteDeadline = MonotonicClock.now() + UInt64(stallSeconds * 2 * 1e9)
        while receiver.firstBodyByteNanos == 0 && MonotonicClock.now() < firstByteDeadline {
            MonotonicClock.sleep(seconds: 0.0005)
        }
        var sent = 0
        if receiver.firstBodyByteNanos != 0 {
            sent = LineSender.run(fd: pipe.write, rate: rate, seconds: seconds, stallSeconds: stallSeconds)
        }
        close(pipe.write)
        let closedAt = MonotonicClock.now()
        let (exit, killed) = child.wait { MonotonicClock.now() - closedAt > UInt64(stallSeconds * 1e9) }
        // The client has exited: its connections close with it.
        let lines = receiver.finish(graceSeconds: 2)

        var failure: String?
        if lines.firstBodyByteNanos == 0 {
            failure = "no body byte arrived within \(Int(stallSeconds * 2)) s" + (killed ? "; killed" : "")
        } else if killed {
            failure =
                "did not end the body within \(Int(stallSeconds)) s of stdin closing (\(lines.latencies.count) of \(sent) timed lines had arrived); killed"
        } else if let error = lines.error {
            failure = error
        } else if !exit.succeeded {
            failure = "exit status \(exit.status)"
        } else if !lines.complete {
            failure = "\(lines.abortedRequests) request\(lines.abortedRequests == 1 ? "" : "s") did not end properly (\(lines.requests) did)"
        }
        if failure == nil && sent < Int(Double(rate) * seconds) {
            failure = "stdin stayed full for \(Int(stallSeconds)) s after \(sent) lines"
        }
        if failure == nil && lines.latencies.count != sent {
            failure = "\(lines.latencies.count) of \(sent) lines arrived"
        }
        return LatencyResult(
            client: client, rate: rate, sent: sent, latencies: lines.latencies.sorted(),
            firstByteNanos: lines.firstBodyByteNanos == 0 ? nil : lines.firstBodyByteNanos - child.startNanos,
            failure: failure)
    }
}
