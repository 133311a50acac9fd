import StreamUpSystem

/// Why a ``TelemetryEmitter`` dropped a record, as its drop report says it.
///
/// Thread safety: a value type.
enum DropCause: Hashable, Comparable {
    /// The buffer had no room for it.
    case full
    /// The buffer had no room for it within the wait the app allows.
    case fullTooLong
    /// It fit, but another write held the buffer's turn (it waits for space).
    case busy
    /// The record could not be encoded, or is longer than a record may be.
    case unwritable
    /// The emitter had finished (or was cancelled).
    case finished
    /// The upload had stopped for good.
    case gaveUp
}

/// The records a ``TelemetryEmitter`` accepted and dropped, and which drops are due to be
/// reported: at the first drop, then at most once per `interval` with the drops since the
/// last report, by cause.
///
/// Thread safety: `state` is guarded by its `Mutex`; callable from any thread. It calls nothing
/// out: the caller reports what it returns.
final class TelemetryCounters: Sendable {
    /// Drops to report: how many of each cause since the last report, how many in all, and
    /// whether this is the first report.
    ///
    /// Thread safety: a value type.
    struct Report {
        var drops: [DropCause: Int]
        var total: Int
        var first: Bool
    }

    private struct State {
        var accepted = 0
        var dropped = 0
        var unreported: [DropCause: Int] = [:]
        /// When the last report was made (nil: none yet).
        var lastReport: UploadClock.Instant?
    }
    private let state = Mutex(State())
    let interval: Duration

    init(reportEvery interval: Duration) {
        self.interval = interval
    }

    var accepted: Int { state.withLock { $0.accepted } }
    var dropped: Int { state.withLock { $0.dropped } }

    func accept() {
        state.withLock { $0.accepted += 1 }
    }

    /// Counts a drop for `cause` at `now`; returns the report that is due, if one is.
    func drop(_ cause: DropCause, now: UploadClock.Instant) -> Report? {
        state.withLock { state in
            state.dropped += 1
            state.unreported[cause, default: 0] += 1
            let first = state.lastReport == nil
            if let last = state.lastReport, last.duration(to: now) < interval { return nil }
            state.lastReport = now
            defer { state.unreported = [:] }
            return Report(drops: state.unreported, total: state.dropped, first: first)
        }
    }

    /// The drops not reported yet, if any (at finish).
    func remaining() -> Report? {
        state.withLock { state in
            guard !state.unreported.isEmpty else { return nil }
            defer { state.unreported = [:] }
            return Report(drops: state.unreported, total: state.dropped, first: false)
        }
    }
}
