import Foundation
import StreamUp
import StreamUpSystem

/// The supervisor's grip on one copy of a `streamup run` pipeline, handed to its
/// ``UploadSession`` (``UploadSession/Supervision/pipeline(_:)``): the session registers how to
/// stop and abort its upload and where its metrics are; the supervisor stops, aborts and
/// scrapes through it. A stop asked for before the upload has started is passed on when it
/// registers.
///
/// Thread safety: `state` is a `Mutex`; `stop` and `abort` are called outside it.
final class PipelineHandle: Sendable {
    private struct State {
        var stop: (@Sendable () -> Void)?
        var abort: (@Sendable () -> Void)?
        var abortLine: (@Sendable () -> String)?
        var stopRequested = false
        var aborted = false
        var metrics: Metrics?
    }

    /// The pipeline's name: what its stderr lines start with, its `pipeline` label.
    let name: String
    /// Told once the upload has started (the supervisor's `started` event).
    private let onStart: @Sendable () -> Void
    private let state = Mutex(State())

    init(name: String, onStart: @escaping @Sendable () -> Void = {}) {
        self.name = name
        self.onStart = onStart
    }

    /// The upload has started: `stop` ends it gracefully (as SIGTERM), `abort` at once;
    /// `abortLine` says what an abort now loses or where it is kept. A stop or an abort asked
    /// for earlier is passed on now.
    func register(
        stop: @escaping @Sendable () -> Void, abort: @escaping @Sendable () -> Void, abortLine: @escaping @Sendable () -> String, metrics: Metrics
    ) {
        let (stopNow, abortNow) = state.withLock { state in
            state.stop = stop
            state.abort = abort
            state.abortLine = abortLine
            state.metrics = metrics
            return (state.stopRequested, state.aborted)
        }
        onStart()
        if stopNow { stop() }
        if abortNow { abort() }
    }

    /// Asks the pipeline to stop as on SIGTERM (now, or once its upload has started).
    func stop() {
        let stop = state.withLock { state in
            state.stopRequested = true
            return state.stop
        }
        stop?()
    }

    /// Stops the pipeline's upload at once (now, or as soon as it has started): what a spool or
    /// a state file keeps is sent by the next start.
    func abort() {
        let abort = state.withLock { state in
            state.aborted = true
            return state.abort
        }
        abort?()
    }

    /// Whether the supervisor aborted it (its shutdown timeout passed, or a second signal).
    var wasAborted: Bool { state.withLock { $0.aborted } }

    /// What aborting it now loses or where it is kept (nil before its upload started).
    var abortLine: String? { state.withLock { $0.abortLine }?() }

    /// The pipeline's metrics, once its upload has started.
    var metrics: Metrics? { state.withLock { $0.metrics } }
}
