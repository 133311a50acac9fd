import Foundation
import StreamUp
import StreamUpSystem

/// One pipeline of `streamup run` as the upload code sees it: its name (the prefix of its
/// stderr lines), where its stop and its metrics go instead of the process's signals and a
/// metrics server of its own. Bound as a task local (``current``) around the pipeline's task;
/// without one, a command runs alone and handles its own signals and metrics.
///
/// Thread safety: `state` is a `Mutex`; `stop` and `abort` are called outside it.
final class PipelineContext: Sendable {
    /// The pipeline the current task (or the event callback, through ``withName(_:_:)``) runs.
    @TaskLocal static var current: PipelineContext?
    /// The name stderr lines are prefixed with, bound also around event callbacks that run on
    /// the library's queues (no task there).
    @TaskLocal static var lineName: String?

    private struct State {
        var stop: (@Sendable () -> Void)?
        var abort: (@Sendable () -> Void)?
        var stopRequested = false
        var metrics: Metrics?
    }

    let name: String
    private let state = Mutex(State())

    init(name: String) {
        self.name = name
    }

    /// The upload has started: `stop` ends it gracefully (as SIGTERM), `abort` at once.
    /// A stop asked for earlier is passed on now.
    func register(stop: @escaping @Sendable () -> Void, abort: @escaping @Sendable () -> Void, metrics: Metrics) {
        let stopNow = state.withLock { state in
            state.stop = stop
            state.abort = abort
            state.metrics = metrics
            return state.stopRequested
        }
        if stopNow { stop() }
    }

    /// Asks the pipeline to stop as on SIGTERM (now, or once its upload has started).
    func stop() {
        let stop = state.withLock { state in
            state.stopRequested = true
            return state.stop
        }
        stop?()
    }

    /// Stops the pipeline's upload at once (a spool keeps what was not acknowledged).
    func abort() {
        state.withLock { $0.abort }?()
    }

    /// Whether a stop was asked for (a reload removed it, or SIGTERM).
    var wasStopped: Bool { state.withLock { $0.stopRequested } }

    /// The pipeline's metrics, once its upload has started.
    var metrics: Metrics? { state.withLock { $0.metrics } }

    /// Runs `body` with stderr lines prefixed with `name` (nil: none).
    static func withName<T>(_ name: String?, _ body: () -> T) -> T {
        guard let name else { return body() }
        return $lineName.withValue(name, operation: body)
    }
}
