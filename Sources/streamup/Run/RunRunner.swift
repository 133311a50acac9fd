import Foundation
import StreamUp
import StreamUpHTTP
import StreamUpSink
import StreamUpSystem

#if canImport(Glibc)
import Glibc
#endif

/// Runs `streamup run FILE`: reads the file (refused whole, one line per problem, exit 64),
/// checks it fits the open-files limit, serves `--metrics`, hands the pipelines to a
/// ``RunSupervisor`` and the signals to it (SIGHUP reads the file again), and exits with the
/// status the supervision decides. `--check` only checks the file (``PipelineCheck``).
///
/// Thread safety: runs on the main task; signals arrive on ``SignalHandling``'s queue.
enum RunRunner {
    static func run(_ options: RunOptions) async -> Int32 {
        let name = options.file
        let text: String
        switch read(name) {
        case .success(let read): text = read
        case .failure(let problem):
            Terminal.error("run: \(problem.message)")
            return ExitStatus.usage
        }
        let environment = ProcessInfo.processInfo.environment
        if options.check { return check(text, name: name, environment: environment) }
        let file: PipelineFile
        switch load(text, name: name, environment: environment) {
        case .success(let loaded): file = loaded
        case .failure(let refusal):
            for problem in refusal.problems { Terminal.error("run: \(said(problem, in: name))") }
            return ExitStatus.usage
        }
        let supervisor = RunSupervisor()
        let metrics = RunMetrics(supervisor: supervisor, unhealthyAfter: options.metrics.unhealthyAfter)
        let server: SinkServer?
        do {
            server = try options.metrics.server(responder: { method, target in metrics.answer(method, target) })
            if let server, options.metrics.port == 0 {
                Terminal.error("serving metrics on \(server.urlString)metrics and health on \(server.urlString)health")
            }
        } catch {
            Terminal.error("--metrics: \(error)")
            return ExitStatus.usage
        }
        defer { server?.stop() }
        SignalHandling.install { signal in
            switch signal {
            case .hangUp: reload(name, into: supervisor)
            case .interrupt, .terminate: supervisor.stop(signal: signal.name)
            }
        }
        supervisor.load(file)
        return await supervisor.run()
    }

    /// SIGHUP: the file again; refused whole (the running pipelines go on) when it cannot be
    /// read, parsed or run within the open-files limit.
    private static func reload(_ name: String, into supervisor: RunSupervisor) {
        let loaded = read(name).mapError { PipelineFile.Refusal(problems: [$0]) }.flatMap { text in
            load(text, name: name, environment: ProcessInfo.processInfo.environment)
        }
        switch loaded {
        case .success(let file):
            supervisor.reload(file)
        case .failure(let refusal):
            for problem in refusal.problems { Terminal.error("run: reload refused, the pipelines running go on: \(said(problem, in: name))") }
        }
    }

    /// The pipelines of `text`, or every problem: a line that does not parse, a file with no
    /// pipeline, more pipelines than the open-files limit takes (line 0: the whole file).
    static func load(_ text: String, name: String, environment: [String: String]) -> Result<PipelineFile, PipelineFile.Refusal> {
        let file: PipelineFile
        do {
            file = try PipelineFile.parse(text, environment: environment)
        } catch {
            return .failure(error)
        }
        guard !file.pipelines.isEmpty else {
            return .failure(PipelineFile.Refusal(problems: [whole("\(name) has no pipeline (each line that is not blank or a # comment is one)")]))
        }
        if let refusal = OpenFileBudget.refusal(file, limit: DescriptorLimit.current, name: name) {
            return .failure(PipelineFile.Refusal(problems: [whole(refusal)]))
        }
        return .success(file)
    }

    /// The text of the file `name`, or one line saying why it cannot be read.
    static func read(_ name: String) -> Result<String, PipelineFile.Problem> {
        var status = stat()
        guard stat(name, &status) == 0 else { return .failure(whole("cannot read \(name): \(String(cString: strerror(errno)))")) }
        guard status.st_mode & S_IFMT != S_IFDIR else { return .failure(whole("cannot read \(name): it is a directory, not a pipelines file")) }
        guard let data = FileManager.default.contents(atPath: name) else {
            let reason = access(name, R_OK) == 0 ? "it cannot be read" : String(cString: strerror(errno))
            return .failure(whole("cannot read \(name): \(reason)"))
        }
        guard let text = String(data: data, encoding: .utf8) else { return .failure(whole("cannot read \(name): it is not UTF-8 text")) }
        return .success(text)
    }

    /// `--check`: every problem of the file, one line each; 0 when there is none.
    private static func check(_ text: String, name: String, environment: [String: String]) -> Int32 {
        var problems = PipelineCheck.problems(of: text, environment: environment)
        if problems.isEmpty, case .failure(let refusal) = load(text, name: name, environment: environment) { problems = refusal.problems }
        for problem in problems { Terminal.error("run --check: \(said(problem, in: name))") }
        guard problems.isEmpty else { return ExitStatus.usage }
        let count = (try? PipelineFile.parse(text, environment: environment))?.pipelines.count ?? 0
        Terminal.error("run --check: \(name): \(counted(count, "pipeline")), no problem found")
        return ExitStatus.success
    }

    /// `FILE: line N: message`, or the message of a problem of the whole file.
    private static func said(_ problem: PipelineFile.Problem, in name: String) -> String {
        problem.line > 0 ? "\(name): \(problem)" : problem.message
    }

    /// A problem of the whole file (no line of its own).
    private static func whole(_ message: String) -> PipelineFile.Problem {
        PipelineFile.Problem(line: 0, message: message)
    }
}
