import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One log-shipping run: what the shipper cost and what arrived.
///
/// Thread safety: an immutable value.
struct ShippingResult: Sendable {
    let shipper: Shipper
    /// One per process of the shipper (two for `tail | curl`), in start order.
    let exits: [ChildExit]
    let writer: LogWriterResult
    let counts: LineTally.Counts
    /// Why the run does not count, or nil when every line arrived once and all ended well.
    let failure: String?

    var userSeconds: Double { exits.reduce(0) { $0 + $1.userSeconds } }
    var systemSeconds: Double { exits.reduce(0) { $0 + $1.systemSeconds } }
    var cpuSeconds: Double { userSeconds + systemSeconds }
    /// The sum of the processes' peaks (they run side by side).
    var maxRSSMiB: Double { Double(exits.reduce(0) { $0 + $1.maxRSSKiB }) / 1024 }
}

/// Runs one shipper against a file the ``LogWriter`` fills, from the shipper's start to its
/// exit, in a fresh temporary directory:
/// 1. create the empty file, start the shipper, wait until it has the file open;
/// 2. write the lines at the steady rate;
/// 3. wait until the ``LineCountingSink`` has counted every line (it counts them as they
///    arrive, also inside a request that has not ended);
/// 4. SIGTERM (for `tail | curl`: to `tail`, so `curl` sees the end of its input and ends the
///    request), wait for the exit, and check that every request ended.
///
/// Thread safety: stateless; runs on the caller's thread (plus wait threads).
enum ShippingRun {
    /// How long a shipper may take to open the file, and to exit after SIGTERM.
    static let startSeconds = 10.0
    static let stopSeconds = 30.0

    static func run(
        _ shipper: Shipper, binaries: Binaries, syslogNG: SyslogNGVersion?, sink: LineCountingSink,
        rate: Int, seconds: Double, stallSeconds: Double, round: Int
    ) throws(BenchError) -> ShippingResult {
        let directory = NSTemporaryDirectory() + "streamup-bench-\(getpid())-\(shipper.tag)-\(round + 1)"
        let file = directory + "/app.log"
        guard mkdir(directory, 0o700) == 0 else { throw BenchError.system("mkdir \(directory)") }
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let created = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard created >= 0 else { throw BenchError.system("create \(file)") }
        close(created)

        let tally = sink.begin(expected: Int(Double(rate) * seconds))
        defer { sink.end() }
        let processes = try start(shipper, binaries: binaries, syslogNG: syslogNG, file: file, url: sink.url, directory: directory)
        let reader = processes[0]

        var failure: String?
        var writer = LogWriterResult(lines: 0, target: tally.expected, writes: 0, elapsedNanos: 0, maxLagNanos: 0, failure: nil)
        if !waitUntil(seconds: startSeconds, { ProcFiles.hasOpen(pid: reader.pid, path: file) }) {
            failure = "did not open \(file) within \(Int(startSeconds)) s"
        } else {
            writer = LogWriter.run(path: file, rate: rate, seconds: seconds)
            if let problem = writer.failure {
                failure = problem
            } else {
                let watch = StallWatch(seconds: stallSeconds) { tally.counts.distinct }
                while tally.counts.distinct < writer.lines && !watch.isStalled() {
                    MonotonicClock.sleep(seconds: 0.01)
                }
                if tally.counts.distinct < writer.lines {
                    failure = "stalled: no line arrived for \(Int(stallSeconds)) s, \(tally.counts.distinct) of \(writer.lines) had"
                }
            }
        }

        reader.signal(SIGTERM)
        var exits: [ChildExit] = []
        for process in processes {
            let stopped = MonotonicClock.now()
            let (exit, killed) = process.wait { MonotonicClock.seconds(MonotonicClock.now() - stopped) > stopSeconds }
            exits.append(exit)
            let expected: Int32 = process === reader && shipper == .tailCurl ? -SIGTERM : 0
            if failure == nil && killed {
                failure = "\(process.name) did not exit within \(Int(stopSeconds)) s of SIGTERM; killed"
            } else if failure == nil && exit.status != expected {
                failure = "\(process.name) exited with status \(exit.status)\(firstLine(of: directory + "/\(process.name).stderr"))"
            }
        }
        // A single request ends at the shipper's exit; its end reaches the tally just before.
        _ = waitUntil(seconds: 2) { !shipper.sendsOneRequest || tally.counts.requests > 0 }
        let counts = tally.counts
        if failure == nil && (counts.distinct != writer.lines || counts.duplicates > 0 || counts.abortedRequests > 0) {
            failure =
                "the sink got \(counts.distinct) of \(writer.lines) lines, \(counts.duplicates) duplicates, \(counts.abortedRequests) requests cut before their end"
        }
        return ShippingResult(shipper: shipper, exits: exits, writer: writer, counts: counts, failure: failure)
    }

    /// Starts the shipper's processes, the one that reads the file first.
    private static func start(
        _ shipper: Shipper, binaries: Binaries, syslogNG: SyslogNGVersion?, file: String, url: String, directory: String
    ) throws(BenchError) -> [ChildProcess] {
        let stderr = { (name: String) in ChildStream.file("\(directory)/\(name).stderr") }
        switch shipper {
        case .streamup, .single:
            let arguments = Shipper.streamupArguments(single: shipper == .single, file: file, url: url)
            return [try ChildProcess.spawn(binaries.streamup, arguments, stderr: stderr("streamup"), name: "streamup", measuredBy: binaries.time)]
        case .tailCurl:
            let pipe = try Descriptors.pipe()
            defer {
                close(pipe.read)
                close(pipe.write)
            }
            let tail = try ChildProcess.spawn(
                binaries.tail, Shipper.tailArguments(file: file), stdout: .descriptor(pipe.write), stderr: stderr("tail"),
                name: "tail", measuredBy: binaries.time)
            do {
                let curl = try ChildProcess.spawn(
                    binaries.curl, Shipper.curlArguments(url: url), stdin: .descriptor(pipe.read), stderr: stderr("curl"),
                    name: "curl", measuredBy: binaries.time)
                return [tail, curl]
            } catch {
                tail.signal(SIGKILL)
                _ = tail.wait()
                throw error
            }
        case .syslogNG:
            guard let path = binaries.syslogNG, let version = syslogNG else {
                throw BenchError("syslog-ng is not installed (Debian: apt-get install syslog-ng-core syslog-ng-mod-http)")
            }
            try SyslogNGSetup.prepare(directory: directory, version: version.configVersion, file: file, url: url)
            let output = ChildStream.file("\(directory)/syslog-ng.stderr")
            return [
                try ChildProcess.spawn(
                    path, SyslogNGSetup.arguments(directory: directory), stdout: output, stderr: output,
                    name: "syslog-ng", measuredBy: binaries.time)
            ]
        }
    }

    /// Polls `condition` every 10 ms for at most `seconds`; returns whether it became true.
    private static func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = MonotonicClock.now() + UInt64(seconds * 1e9)
        while !condition() {
            guard MonotonicClock.now() < deadline else { return false }
            MonotonicClock.sleep(seconds: 0.01)
        }
        return true
    }

    /// `: FIRST LINE` of a file, or nothing.
    private static func firstLine(of path: String) -> String {
        let line = (try? String(contentsOfFile: path, encoding: .utf8))?.split(separator: "\n").first
        return line.map { ": \($0)" } ?? ""
    }
}
