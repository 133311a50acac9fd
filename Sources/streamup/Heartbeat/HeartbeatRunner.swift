import Foundation
import StreamUp
import StreamUpHTTP
import StreamUpSink
import StreamUpSystem

#if canImport(Glibc)
import Glibc
#endif

/// Runs the heartbeat command: beats alone or as a pipeline of `streamup run` (`supervision`),
/// or around a job (`-- COMMAND`, ``runJob``, never in `run`).
///
/// Thread safety: runs on the caller's task; the child process is watched on Foundation's
/// queue, the job's deadline fires on a global queue.
enum HeartbeatRunner {
    /// How long the last records may take once the job has ended, unless --shutdown-timeout says.
    static let defaultJobShutdownTimeout: Duration = .seconds(5)

    static func run(_ options: HeartbeatOptions, supervision: UploadSession.Supervision = .alone) async -> Int32 {
        let stop = HeartbeatStop()
        let session = UploadSession(options.upload, supervision: supervision)
        let formatter: RecordFormatter?
        do {
            formatter = try options.upload.recordFormatter()
        } catch {
            session.say("heartbeat: \(error)")
            return ExitStatus.usage
        }
        // With --format, the heartbeat formats its own lines (in its task, before writing them).
        let producer = HeartbeatProducer(
            every: options.every, count: options.count, fields: options.fields.map { ($0.name, $0.value) }, stop: stop,
            formatting: formatter.map { LineFormatting($0) })
        guard !options.command.isEmpty else {
            return await session.withTarget { url in
                // SIGINT/SIGTERM (or the supervisor's stop) send a final `{"event":"stop"}`.
                await session.run(to: url, producer: producer) {
                    stop.stop(final: [("event", .string("stop"))])
                }.status
            }
        }
        var jobStatus: Int32?
        let uploadStatus = await session.withTarget { url in
            let ran = await runJob(options, session: session, producer: producer, stop: stop, to: url)
            jobStatus = ran.job
            return ran.upload
        }
        return jobStatus ?? uploadStatus
    }

    /// `-- COMMAND`: a job wrapper, as cron runs it. The command's stdin, stdout and stderr are
    /// its own (inherited) and its exit status is the result; the beats add nothing to stdout
    /// (the monitor's answer goes only to `-o FILE`) and their delivery trouble is one line on
    /// stderr. Once the command has ended, the last records get at most --shutdown-timeout
    /// (default 5s) to be acknowledged, whether the monitor answers or not.
    /// - Returns: the upload's status and the command's (nil when it could not be set up, the
    ///   upload's status then says why).
    private static func runJob(
        _ options: HeartbeatOptions, session: UploadSession, producer: some Producer, stop: HeartbeatStop, to url: String
    ) async -> (upload: Int32, job: Int32?) {
        let verbose = options.upload.verbose
        let trouble = DeliveryTrouble()
        let metrics = options.upload.metrics.host == nil ? nil : Metrics(unhealthyAfter: options.upload.metrics.unhealthyAfter)
        let uploader: StreamUploader
        switch session.makeUploader(
            to: url,
            onEvent: { event in
                metrics?.record(event)
                // A failing spell is told once, at the end (or when the upload gives up).
                if !verbose, trouble.absorb(event) { return }
                session.log(event)
            })
        {
        case .success(let made): uploader = made
        case .failure(let failure): return (failure.status, nil)
        }
        let metricsServer: SinkServer?
        switch session.serveMetrics(metrics, uploader: uploader, files: nil) {
        case .success(let server): metricsServer = server
        case .failure(let failure): return (failure.status, nil)
        }
        defer { metricsServer?.stop() }
        let name = options.command.joined(separator: " ")
        let timeout = options.upload.shutdownTimeout ?? defaultJobShutdownTimeout
        let child = Process()
        // The job gets streamup's environment, but not the password meant for -u.
        child.environment = ProcessInfo.processInfo.environment.filter { $0.key != AuthOptions.passwordVariable }
        let started = ContinuousClock.now
        child.terminationHandler = { process in
            let seconds = (ContinuousClock.now - started).seconds
            stop.stop(final: [
                ("event", .string("exit")), ("command", .string(name)),
                ("exit_status", .int(Int(status(of: process)))), ("duration_s", .double(seconds)),
            ])
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout.seconds) {
                if trouble.deadlinePassed(after: timeout) { uploader.cancel() }
            }
        }
        // The handlers go in first (they take effect a moment after install): a signal that
        // arrives while the job starts is passed on once it runs, never lost. Stopping at once
        // kills the job first: it must not run on with nobody to report its end.
        let forward = SignalForward()
        SignalHandling.installStop(
            onFirst: { signal, number in
                Terminal.error("stopping (\(signal)): passed on to the command, whose end ends the beats \(SignalHandling.secondStops)")
                forward.send(number)
            },
            onSecond: {
                forward.killAll()
                return "the command was killed; \(uploader.abortLine)"
            })
        do {
            // streamup ignores SIGPIPE and the stray signals, and SIGINT/SIGTERM/SIGHUP for its
            // handlers; the job starts with them at their defaults, as cron would start it
            // (`yes | head` must end quietly). Through the shim: a streamup killed outright
            // takes the job with it.
            try ExecShim.run(
                child, executable: "/usr/bin/env", arguments: ["--default-signal=\(SignalHandling.startedCommandDefaults)", "--"] + options.command)
        } catch {
            Terminal.error("cannot run '\(name)': \(error.localizedDescription)")
            return (ExitStatus.noAnswer, 127)
        }
        forward.started(child.processIdentifier)
        // The job's terminal is its own: a meter only when asked for (--progress, -v).
        let meter = ProgressMeter.start(for: uploader, verbose: verbose, requested: options.upload.progress ?? false)
        let uploadStatus = await deliver(producer, with: uploader, to: options.upload.outputFile, trouble: trouble, url: url)
        meter?.stop()
        trouble.uploadEnded()
        child.waitUntilExit()
        return (uploadStatus, status(of: child))
    }

    /// Runs the job's upload; says in one line why the beats were not all delivered, if so.
    private static func deliver(
        _ producer: some Producer, with uploader: StreamUploader, to outputFile: String?, trouble: DeliveryTrouble, url: String
    ) async -> Int32 {
        do {
            let response = try await uploader.run(producer)
            if let refused = uploader.refusedLine { Terminal.error("heartbeat: \(refused)") }
            guard response.isSuccess else {
                Terminal.error("heartbeat: the beats were not delivered: " + AnswerReport.failureLine(response, requestURL: URL(string: url)))
                return ExitStatus.httpFailure
            }
            guard let outputFile else { return ExitStatus.success }
            return AnswerReport.printSuccess(response, to: outputFile)
        } catch {
            Terminal.error("heartbeat: the beats were not all delivered: \(trouble.reason(for: error)); \(uploader.abortLine)")
            return ExitStatus.noAnswer
        }
    }

    /// A process's exit status as a shell gives it: 128 + N when signal N ended it.
    private static func status(of process: Process) -> Int32 {
        process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }
}

/// What went wrong with a job's beats, kept to be told in one line at the end: the last
/// failure of a spell (its retries are not printed one by one), and whether the job's
/// deadline cut the upload.
///
/// Thread safety: a `Mutex` guards the state; events come from the uploader's threads, the
/// deadline from a global queue.
final class DeliveryTrouble: Sendable {
    private struct State {
        var lastFailure: String?
        var deadline: Duration?
        var ended = false
    }
    private let state = Mutex(State())

    /// Keeps the reason of a failure; true when `event` is about a failing spell (which this
    /// tells instead of the usual lines).
    func absorb(_ event: UploadEvent) -> Bool {
        switch event.detail {
        case .retrying(let reason, _, _, _):
            state.withLock { $0.lastFailure = reason }
            return true
        case .recovered:
            state.withLock { $0.lastFailure = nil }
            return true
        default:
            return false
        }
    }

    /// The job's deadline passed; true when the upload is still running (and must be cut).
    func deadlinePassed(after timeout: Duration) -> Bool {
        state.withLock { state in
            guard !state.ended else { return false }
            state.deadline = timeout
            return true
        }
    }

    func uploadEnded() {
        state.withLock { $0.ended = true }
    }

    /// Why the upload ended with `error`: the deadline and the last failure, or the error.
    func reason(for error: any Error) -> String {
        let (failure, deadline) = state.withLock { ($0.lastFailure, $0.deadline) }
        guard let deadline else { return "\(error)" }
        let after = "no acknowledgement within \(UploadRunner.short(deadline)) of the command's end (--shutdown-timeout)"
        return failure.map { "\($0); \(after)" } ?? after
    }
}

/// Passes a signal on to the job: at once when it runs, or as soon as it has started.
///
/// Thread safety: a `Mutex` guards the state; `kill` is called outside it.
final class SignalForward: Sendable {
    private struct State {
        var pid: Int32?
        var pending: Int32?
    }
    private let state = Mutex(State())

    func send(_ signal: Int32) {
        let pid = state.withLock { state -> Int32? in
            if state.pid == nil { state.pending = signal }
            return state.pid
        }
        if let pid { kill(pid, signal) }
    }

    /// Kills the job and what it started (Foundation starts it in a process group of its own),
    /// if it has started.
    func killAll() {
        guard let pid = state.withLock({ $0.pid }) else { return }
        kill(-pid, SIGKILL)
        kill(pid, SIGKILL)
    }

    func started(_ pid: Int32) {
        let pending = state.withLock { state -> Int32? in
            state.pid = pid
            return state.pending
        }
        if let pending { kill(pid, pending) }
    }
}
