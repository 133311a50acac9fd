import Foundation
import StreamUp
import StreamUpSystem

/// The shell around ``RunSupervision``: it owns the machine under one lock, feeds it the events
/// (the file, signals, each copy's start and end, time passing) and performs the actions it
/// returns after unlocking: it starts each copy as a task of its own with a ``PipelineHandle``,
/// stops and aborts copies through their handles, arms a timer for each deadline, says the
/// machine's lines, and ends ``run()`` with the status the machine decides.
///
/// Thread safety: `state` is a `Mutex`; tasks are started, handles called and lines written
/// outside it.
final class RunSupervisor: Sendable {
    typealias Machine = RunSupervision<ContinuousClock.Instant>

    private struct State {
        var machine = Machine()
        var handles: [Machine.Copy: PipelineHandle] = [:]
        var done: CheckedContinuation<Int32, Never>?
        var status: Int32?
    }

    private let state = Mutex(State())
    /// Where the deadlines' timers fire.
    private let timers = DispatchQueue(label: "streamup.run.timers")

    init() {}

    // MARK: Events

    /// Starts the file's pipelines.
    func load(_ file: PipelineFile) {
        handle { $0.load(file, now: .now) }
    }

    /// Applies the file read again (SIGHUP).
    func reload(_ file: PipelineFile) {
        handle { $0.reload(file, now: .now) }
    }

    /// SIGINT or SIGTERM.
    func stop(signal: String) {
        handle { $0.stopSignal(signal, now: .now) }
    }

    /// Waits until the machine says `run` is over; returns its exit status.
    func run() async -> Int32 {
        await withCheckedContinuation { continuation in
            let status = state.withLock { state -> Int32? in
                if state.status == nil { state.done = continuation }
                return state.status
            }
            if let status { continuation.resume(returning: status) }
        }
    }

    /// What `/health` and `/metrics` read: each pipeline of the file, its phase and its handle.
    func snapshot() -> (slots: [Machine.Slot], handles: [Machine.Copy: PipelineHandle], failures: [(name: String, end: Machine.End)]) {
        state.withLock { ($0.machine.slots, $0.handles, $0.machine.failures) }
    }

    /// Feeds one event to the machine and performs what it returns.
    private func handle(_ event: (inout Machine) -> [Machine.Action]) {
        let (actions, handles) = state.withLock { state in
            let actions = event(&state.machine)
            // Handles for the copies to start are made under the lock, so a stop that comes
            // before the task runs finds one.
            for case .start(let pipeline, let copy) in actions {
                state.handles[copy] = PipelineHandle(name: pipeline.name) { [weak self] in self?.handle { $0.started(copy) } }
            }
            return (actions, state.handles)
        }
        for action in actions { perform(action, handles: handles) }
    }

    private func perform(_ action: Machine.Action, handles: [Machine.Copy: PipelineHandle]) {
        switch action {
        case .start(let pipeline, let copy):
            guard let handle = handles[copy] else { preconditionFailure("a copy starts without its handle") }
            Task {
                let status = await Self.runCommand(pipeline.command, supervision: .pipeline(handle))
                self.state.withLock { _ = $0.handles.removeValue(forKey: copy) }
                self.handle { $0.ended(copy, status: status, now: .now) }
            }
        case .stop(let copy):
            handles[copy]?.stop()
        case .abort(let copy):
            handles[copy]?.abort()
        case .wake(let instant):
            let delay = ContinuousClock.now.duration(to: instant)
            timers.asyncAfter(deadline: .now() + max(delay, .zero).seconds) { [weak self] in
                self?.handle { $0.tick(now: .now) }
            }
        case .say(let line, let pipeline):
            Terminal.error(pipeline == nil ? "run: \(line)" : line, pipeline: pipeline)
        case .stopAtOnce(let signal):
            // Every copy's own words for what stopping now loses, then out at once.
            let lines = handles.values.sorted { $0.name < $1.name }.compactMap { handle in handle.abortLine.map { "\(handle.name): \($0)" } }
            Terminal.error("\(signal) again: stopped at once" + (lines.isEmpty ? "" : "; " + lines.joined(separator: "; ")))
            exit(ExitStatus.interrupted)
        case .finish(let status):
            let done = state.withLock { state in
                state.status = status
                defer { state.done = nil }
                return state.done
            }
            done?.resume(returning: status)
        }
    }

    private static func runCommand(_ command: Command, supervision: UploadSession.Supervision) async -> Int32 {
        switch command {
        case .tail(let options): await TailRunner.run(options, supervision: supervision)
        case .journal(let options): await JournalRunner.run(options, supervision: supervision)
        case .heartbeat(let options): await HeartbeatRunner.run(options, supervision: supervision)
        case .help, .version, .upload, .sink, .run: preconditionFailure("a pipeline is tail, journal or heartbeat")
        }
    }
}
