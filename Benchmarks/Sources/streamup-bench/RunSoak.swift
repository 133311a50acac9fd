import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What the `run` soak saw.
///
/// Thread safety: an immutable value.
struct RunSoakResult: Sendable {
    let pipelines: Int
    let seconds: Double
    let samples: [SoakSample]
    let linesWritten: Int
    let counts: LineTally.Counts
    let reloads: Int
    let rotations: Int
    let outageSeconds: Double
    let exit: ChildExit?
    /// Why the run does not count, or nil.
    let failure: String?
}

/// The `run` soak: `streamup run FILE` with `pipelines` tail pipelines (each its own file, state
/// file and spool, into its own path of a counting receiver) for `seconds`, while the files
/// grow at `rate` lines a second in all and rotate every `rotateSeconds`, the pipelines file
/// loses its last pipeline and gets it back on alternate reloads (a SIGHUP every
/// `reloadSeconds`), and the receiver goes away for `outageSeconds` a third of the way in.
/// Resident memory, open descriptors and threads are sampled every `sampleSeconds`; at the end
/// every line written must have arrived (duplicates are counted: the counting receiver does not
/// de-duplicate as the sink does).
///
/// Thread safety: stateless; runs on the caller's thread (plus the writer's and the sampler's).
enum RunSoak {
    struct Settings: Sendable {
        var pipelines = 20
        var seconds = 1_800.0
        var rate = 1_000
        var rotateSeconds = 90.0
        var reloadSeconds = 60.0
        var outageSeconds = 120.0
        var sampleSeconds = 10.0

        static let quick = Settings(
            pipelines: 3, seconds: 12, rate: 300, rotateSeconds: 4, reloadSeconds: 3, outageSeconds: 2, sampleSeconds: 1)
    }

    static func run(binaries: Binaries, settings: Settings) throws(BenchError) -> RunSoakResult {
        let directory = NSTemporaryDirectory() + "streamup-bench-\(getpid())-run-soak"
        for sub in ["", "/logs", "/state", "/spool"] {
            guard mkdir(directory + sub, 0o700) == 0 else { throw BenchError.system("mkdir \(directory + sub)") }
        }
        var keep = false
        defer {
            if keep {
                Progress.log("run soak: kept \(directory) (state files, spools, logs and run.log) to look at")
            } else {
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
        let names = (0..<settings.pipelines).map { String(format: "p%02d", $0) }
        let paths = names.map { "\(directory)/logs/\($0).log" }
        for path in paths {
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw BenchError.system("create \(path)") }
            close(fd)
        }
        let expected = Int(Double(settings.rate) * settings.seconds) + settings.rate
        let tally = LineTally(expected: expected)
        var sink = try LineCountingSink(port: 0, countingInto: tally)
        let port = sink.port
        let lines = zip(names, paths).map { name, path in
            "tail --name \(name) --state \(directory)/state/\(name).state --spool \(directory)/spool/\(name) \(path) http://127.0.0.1:\(port)/\(name)"
        }
        let file = directory + "/pipelines.conf"
        func writePipelines(_ count: Int) throws(BenchError) {
            let text = lines.prefix(count).joined(separator: "\n") + "\n"
            guard FileManager.default.createFile(atPath: file + ".new", contents: Data(text.utf8)), rename(file + ".new", file) == 0 else {
                throw BenchError.system("write \(file)")
            }
        }
        try writePipelines(settings.pipelines)
        let child = try ChildProcess.spawn(
            binaries.streamup, ["run", file], stderr: .file(directory + "/run.log"), measuredBy: binaries.time)
        Progress.log(
            "run soak: \(settings.pipelines) pipelines for \(Int(settings.seconds)) s, \(settings.rate) lines/s, rotation every \(Int(settings.rotateSeconds)) s, reload every \(Int(settings.reloadSeconds)) s, receiver down \(Int(settings.outageSeconds)) s"
        )
        let sampler = SoakSampler(pid: child.pid, interval: settings.sampleSeconds) { tally.counts.distinct }
        // Every pipeline has its file open before the first line is written.
        let opened = waitFor(seconds: 30) { ProcFiles.openCount(pid: child.pid, of: paths) == paths.count }
        let writer = RotatingLogWriter(paths: paths, rate: settings.rate, rotateSeconds: settings.rotateSeconds)
        let start = MonotonicClock.now()
        let elapsed = { MonotonicClock.seconds(MonotonicClock.now() - start) }
        var reloads = 0
        var nextReload = settings.reloadSeconds
        let outageAt = settings.seconds / 3
        var outage: (from: Double, to: Double)?
        var failure: String? = opened ? nil : "the pipelines did not open their files within 30 s"
        while failure == nil, elapsed() < settings.seconds {
            MonotonicClock.sleep(seconds: 0.05)
            if elapsed() >= nextReload {
                reloads += 1
                try writePipelines(reloads % 2 == 1 ? settings.pipelines - 1 : settings.pipelines)
                child.signal(SIGHUP)
                nextReload += settings.reloadSeconds
            }
            if outage == nil, settings.outageSeconds < settings.seconds, elapsed() >= outageAt {
                sink.stop()
                outage = (elapsed(), elapsed() + settings.outageSeconds)
                Progress.log("run soak: receiver down at \(Int(elapsed())) s")
            }
            if let down = outage, down.to > 0, elapsed() >= down.to {
                sink = try LineCountingSink(port: port, countingInto: tally)
                outage = (down.from, 0)
                Progress.log("run soak: receiver back at \(Int(elapsed())) s")
            }
            if let text = writer.failureText { failure = text }
        }
        writer.stop()
        if let down = outage, down.to > 0 { sink = try LineCountingSink(port: port, countingInto: tally) }
        // The last pipeline is back in the file for the end (an odd number of reloads took it out).
        if reloads % 2 == 1 {
            try writePipelines(settings.pipelines)
            child.signal(SIGHUP)
            reloads += 1
        }
        let written = writer.linesWritten
        if failure == nil, !waitFor(seconds: 180, { tally.counts.distinct >= written }) {
            let missing = tally.missing(below: written)
            let byPipeline = Dictionary(grouping: missing) { names[$0 % names.count] }.sorted { $0.key < $1.key }
            let ranges = byPipeline.map { name, numbers in "\(name): \(numbers.count) (seq \(numbers.first ?? 0)–\(numbers.last ?? 0))" }
            failure = "\(tally.counts.distinct) of \(written) lines arrived within 180 s of the end; missing \(ranges.joined(separator: ", "))"
        }
        child.signal(SIGTERM)
        let watch = StallWatch(seconds: 60) { 0 }
        let (exit, killed) = child.wait { watch.isStalled() }
        let samples = sampler.stop()
        sink.stop()
        if failure == nil, killed { failure = "did not exit within 60 s of SIGTERM" }
        if failure == nil, exit.status != 0 { failure = "exit status \(exit.status): \(lastLines(of: directory + "/run.log"))" }
        keep = failure != nil
        return RunSoakResult(
            pipelines: settings.pipelines, seconds: settings.seconds, samples: samples, linesWritten: written, counts: tally.counts,
            reloads: reloads, rotations: writer.rotationCount, outageSeconds: settings.outageSeconds, exit: exit, failure: failure)
    }

    /// Polls `condition` every 50 ms for up to `seconds`; whether it held.
    private static func waitFor(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = MonotonicClock.now() + UInt64(seconds * 1e9)
        while MonotonicClock.now() < deadline {
            if condition() { return true }
            MonotonicClock.sleep(seconds: 0.05)
        }
        return condition()
    }

    private static func lastLines(of path: String) -> String {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(3).joined(separator: " | ")
    }
}
