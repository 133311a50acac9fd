import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One log-shipping run: what the shipper cost and what arrived.
///
/// Thread safety: an immutable value.
struct ShippingResult: Sendable {
    let shipper: Shipper
    /// Files written (and followed).
    let files: Int
    /// One per process of the shipper (two for `tail | curl`), in start order.
    let exits: [ChildExit]
    let writer: LogWriterResult
    let counts: LineTally.Counts
    /// Per line that arrived: from the end of its `write(2)` to its arrival, in ns, ascending.
    let latencies: [UInt64]
    /// Why the run does not count, or nil when every line arrived once and all ended well.
    let failure: String?

    var userSeconds: Double { exits.reduce(0) { $0 + $1.userSeconds } }
    var systemSeconds: Double { exits.reduce(0) { $0 + $1.systemSeconds } }
    var cpuSeconds: Double { userSeconds + systemSeconds }
    /// The sum of the processes' peaks (they run side by side).
    var maxRSSMiB: Double { Double(exits.reduce(0) { $0 + $1.maxRSSKiB }) / 1024 }
    /// CPU per line that arrived, in µs.
    var cpuMicrosecondsPerLine: Double { counts.distinct > 0 ? cpuSeconds * 1e6 / Double(counts.distinct) : 0 }

    func latencyMilliseconds(_ percentile: Double) -> Double? {
        latencies.isEmpty ? nil : Double(Statistics.percentile(sorted: latencies, percentile)) / 1e6
    }
}

/// Runs one shipper against the files the ``LogWriter`` fills (one, or many in a directory it
/// follows with a wildcard), from the shipper's start to its exit, in a fresh temporary directory:
/// 1. create the empty files, start the shipper, wait until it has every file open;
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
        _ shipper: Shipper, files: Int, binaries: Binaries, syslogNG: SyslogNGVersion?, sink: LineCountingSink,
        rate: Int, seconds: Double, stallSeconds: Double, round: Int
    ) throws(BenchError) -> ShippingResult {
        let directory = NSTemporaryDirectory() + "streamup-bench-\(getpid())-\(shipper.tag)-\(files)-\(round + 1)"
        let logs = files == 1 ? directory : directory + "/logs"
        let paths = files == 1 ? [directory + "/app.log"] : (0..<files).map { logs + "/app" + String(1000 + $0).dropFirst() + ".log" }
        guard mkdir(directory, 0o700) == 0, logs == directory || mkdir(logs, 0o700) == 0 else {
            throw BenchError.system("mkdir \(logs)")
        }
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for path in paths {
            let created = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard created >= 0 else { throw BenchError.system("create \(path)") }
            close(created)
        }

        let tally = sink.begin(expected: Int(Double(rate) * seconds))
        defer { sink.end() }
        let followed = files == 1 ? paths[0] : logs + "/*.log"
        let processes = try start(
            shipper, binaries: binaries, syslogNG: syslogNG, file: followed, files: files, sink: sink, directory: directory)
        let reader = processes[0]

        var failure: String?
        var writer = LogWriterResult(lines: 0, target: tally.expected, writes: 0, elapsedNanos: 0, maxLagNanos: 0, failure: nil)
        if !waitUntil(seconds: startSeconds, { ProcFiles.openCount(pid: reader.pid, of: paths) == paths.count }) {
            failure = "had \(ProcFiles.openCount(pid: reader.pid, of: paths)) of the \(files) files open after \(Int(startSeconds)) s"
        } else {
            writer = LogWriter.run(paths: paths, rate: rate, seconds: seconds)
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
        return ShippingResult(
            shipper: shipper, files: files, exits: exits, writer: writer, counts: counts,
            latencies: tally.latencies(writtenAt: writer.writtenAt), failure: failure)
    }

    /// Starts the shipper's processes, the one that reads the file first. `file` is the file,
    /// or the wildcard of the `files` files.
    private static func start(
        _ shipper: Shipper, binaries: Binaries, syslogNG: SyslogNGVersion?, file: String, files: Int, sink: LineCountingSink,
        directory: String
    ) throws(BenchError) -> [ChildProcess] {
        let url = sink.url
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
            let source = files == 1 ? file : String(file.dropLast("/*.log".count))
            try SyslogNGSetup.prepare(directory: directory, version: version.configVersion, file: source, files: files, url: url)
            let output = ChildStream.file("\(directory)/syslog-ng.stderr")
            return [
                try ChildProcess.spawn(
                    path, SyslogNGSetup.arguments(directory: directory), stdout: output, stderr: output,
                    name: "syslog-ng", measuredBy: binaries.time)
            ]
        case .fluentBit:
            guard let path = binaries.fluentBit else { throw BenchError("no fluent-bit binary on PATH") }
            try FluentBitSetup.prepare(directory: directory, path: file, port: sink.port)
            let output = ChildStream.file("\(directory)/fluent-bit.stderr")
            return [
                try ChildProcess.spawn(
                    path, FluentBitSetup.arguments(directory: directory), stdout: output, stderr: output,
                    name: "fluent-bit", measuredBy: binaries.time)
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
