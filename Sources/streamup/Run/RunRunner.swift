import Foundation
import StreamUp
import StreamUpSink
import StreamUpSystem

/// Runs `streamup run FILE`: starts each pipeline of the file as a task of its own (bound to its
/// ``PipelineContext``), reloads the file on SIGHUP, stops all on SIGINT/SIGTERM and ends once
/// every pipeline has ended.
///
/// Thread safety: `state` is a `Mutex`; pipelines are started, stopped and awaited outside it.
final class RunRunner: Sendable {
    /// A pipeline running: what it was made from, its context and its task.
    private struct Running {
        var pipeline: PipelineFile.Pipeline
        var context: PipelineContext
        var task: Task<Void, Never>
    }

    private struct State {
        var running: [String: Running] = [:]
        var stopping = false
        var failed: [String] = []
        var done: CheckedContinuation<Void, Never>?
        var ended = false
    }

    let file: String
    private let state = Mutex(State())

    init(file: String) {
        self.file = file
    }

    static func run(_ options: RunOptions) async -> Int32 {
        let runner = RunRunner(file: options.file)
        let first: PipelineFile
        do {
            first = try runner.load()
        } catch {
            Terminal.error("run: \(options.file): \(error)")
            return ExitStatus.usage
        }
        guard !first.pipelines.isEmpty else {
            Terminal.error("run: \(options.file) has no pipeline (each line that is not blank or a # comment is one)")
            return ExitStatus.usage
        }
        var server: SinkServer?
        do {
            server = try options.metrics.server(responder: { method, target in
                runner.metricsAnswer(method, target, unhealthyAfter: options.metrics.unhealthyAfter)
            })
            if let server, options.metrics.port == 0 {
                Terminal.error("serving metrics on \(server.urlString)metrics and health on \(server.urlString)health")
            }
        } catch {
            Terminal.error("--metrics: \(error)")
            return ExitStatus.usage
        }
        defer { server?.stop() }
        RunSignals.install(reload: { runner.reload() }, stop: { name in runner.stopAll(signal: name) })
        runner.apply(first)
        await runner.waitUntilAllEnded()
        let failed = runner.state.withLock { $0.failed }
        return failed.isEmpty ? ExitStatus.success : ExitStatus.httpFailure
    }

    /// The file, parsed.
    func load() throws -> PipelineFile {
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            throw PipelineFile.Problem(line: 0, message: "cannot be read: \((error as NSError).localizedDescription)")
        }
        return try PipelineFile.parse(text, environment: ProcessInfo.processInfo.environment)
    }

    /// SIGHUP: the file again; unchanged pipelines go on, removed ones stop, new ones start.
    func reload() {
        let file: PipelineFile
        do {
            file = try load()
        } catch {
            Terminal.error("run: reload refused, the pipelines running go on: \(self.file): \(error)")
            return
        }
        Terminal.error("run: reloading \(self.file)")
        apply(file)
    }

    /// Stops the pipelines `file` does not have (or has changed), starts the ones it adds.
    private func apply(_ file: PipelineFile) {
        let (removed, added) = state.withLock { state -> ([Running], [PipelineFile.Pipeline]) in
            guard !state.stopping else { return ([], []) }
            let removed = state.running.values.filter { running in !file.pipelines.contains { $0.isSame(as: running.pipeline) } }
            let added = file.pipelines.filter { pipeline in state.running[pipeline.name].map { !$0.pipeline.isSame(as: pipeline) } ?? true }
            return (removed, added)
        }
        for running in removed {
            Terminal.error("run: stopping pipeline \(running.context.name) (line \(running.pipeline.line)): it is no longer in the file as it was")
            stop(running)
        }
        for pipeline in added { start(pipeline, after: removed.first { $0.context.name == pipeline.name }?.task) }
    }

    /// Starts `pipeline` (once `earlier`, a pipeline of the same name being stopped, has ended).
    private func start(_ pipeline: PipelineFile.Pipeline, after earlier: Task<Void, Never>?) {
        let context = PipelineContext(name: pipeline.name)
        let task = Task {
            await earlier?.value
            let status = await PipelineContext.$current.withValue(context) { await Self.runCommand(pipeline.command) }
            self.ended(pipeline.name, context: context, status: status)
        }
        state.withLock { $0.running[pipeline.name] = Running(pipeline: pipeline, context: context, task: task) }
    }

    private static func runCommand(_ command: Command) async -> Int32 {
        switch command {
        case .tail(let options): await TailRunner.run(options)
        case .journal(let options): await JournalRunner.run(options)
        case .heartbeat(let options): await HeartbeatRunner.run(options)
        case .help, .version, .upload, .sink, .run: ExitStatus.usage
        }
    }

    /// Stops one pipeline as SIGTERM would: it delivers what it holds within its shutdown
    /// timeout, then is stopped at once.
    private func stop(_ running: Running) {
        running.context.stop()
        let timeout = running.pipeline.shutdownTimeout
        let context = running.context
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout.seconds) { context.abort() }
    }

    /// SIGINT/SIGTERM: every pipeline stops.
    func stopAll(signal name: String) {
        let running = state.withLock { state in
            state.stopping = true
            return Array(state.running.values)
        }
        Terminal.error("stopping (\(name)): \(running.count) pipelines deliver what they hold \(SignalHandling.secondStops)")
        for pipeline in running { stop(pipeline) }
        finishIfIdle()
    }

    /// A pipeline's task ended with `status`.
    private func ended(_ name: String, context: PipelineContext, status: Int32) {
        state.withLock { state in
            if state.running[name]?.context === context { state.running[name] = nil }
            if status != ExitStatus.success { state.failed.append(name) }
        }
        if status != ExitStatus.success || !context.wasStopped {
            PipelineContext.$current.withValue(context) {
                Terminal.error("pipeline ended (exit status \(status)); the others go on")
            }
        }
        finishIfIdle()
    }

    /// Ends the wait once no pipeline runs.
    private func finishIfIdle() {
        let done = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard state.running.isEmpty else { return nil }
            state.ended = true
            defer { state.done = nil }
            return state.done
        }
        done?.resume()
    }

    private func waitUntilAllEnded() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.ended || state.running.isEmpty { return true }
                state.done = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    // MARK: Metrics

    /// `/metrics`: every pipeline's series labelled `pipeline="NAME"`; `/health`: 503 while any
    /// pipeline's delivery has failed for `unhealthyAfter`.
    func metricsAnswer(_ method: String, _ target: String, unhealthyAfter: Duration) -> SinkAnswer {
        let pipelines = state.withLock { state in state.running.values.map { ($0.context.name, $0.context.metrics) } }.sorted { $0.0 < $1.0 }
        let path = target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? target
        switch (method, path) {
        case ("GET", "/metrics"), ("HEAD", "/metrics"):
            let texts = pipelines.compactMap { name, metrics in metrics.map { (name, $0.exposition()) } }
            return SinkAnswer(status: 200, contentType: Metrics.contentType, body: Self.merged(texts))
        case ("GET", "/health"), ("HEAD", "/health"):
            let failing = pipelines.compactMap { name, metrics -> String? in
                guard let metrics, metrics.failingFor() >= unhealthyAfter else { return nil }
                return name
            }
            guard failing.isEmpty else { return SinkAnswer(status: 503, body: "delivery failing: \(failing.joined(separator: ", "))\n") }
            return SinkAnswer(status: 200, body: "ok\n")
        default:
            return SinkAnswer(status: 404, body: "not found: /metrics and /health are served here\n")
        }
    }

    /// The expositions of several pipelines as one: each family's HELP and TYPE once, each
    /// sample with the label `pipeline="NAME"` first.
    static func merged(_ texts: [(name: String, text: String)]) -> String {
        var order: [String] = []
        var headers: [String: [String]] = [:]
        var samples: [String: [String]] = [:]
        for (name, text) in texts {
            var family = ""
            for line in text.split(separator: "\n").map(String.init) {
                if line.hasPrefix("# ") {
                    family = line.split(separator: " ").dropFirst(2).first.map(String.init) ?? family
                    if headers[family] == nil { order.append(family) }
                    if headers[family, default: []].count < 2 { headers[family, default: []].append(line) }
                    continue
                }
                let label = "pipeline=\"\(Metrics.escaped(name))\""
                let sample: String
                if let brace = line.firstIndex(of: "{") {
                    sample = line[...brace] + label + "," + line[line.index(after: brace)...]
                } else if let space = line.firstIndex(of: " ") {
                    sample = line[..<space] + "{\(label)}" + line[space...]
                } else {
                    continue
                }
                samples[family, default: []].append(sample)
            }
        }
        return order.map { family in (headers[family, default: []] + samples[family, default: []]).joined(separator: "\n") + "\n" }.joined()
    }
}

extension PipelineFile.Pipeline {
    /// How long a stopped pipeline may take to deliver what it holds.
    var shutdownTimeout: Duration {
        let upload: UploadOptions? =
            switch command {
            case .tail(let options): options.upload
            case .journal(let options): options.upload
            case .heartbeat(let options): options.upload
            case .help, .version, .upload, .sink, .run: nil
            }
        return upload?.shutdownTimeout ?? UploadOptions.defaultShutdownTimeout
    }
}
