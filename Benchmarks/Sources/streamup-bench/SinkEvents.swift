import StreamUpSink

/// Collects the in-process sink's request events, so each run can check what the sink got.
///
/// Thread safety: the list is mutex-guarded; the sink reports from its connection threads.
final class SinkEvents: Sendable {
    private let events = LockedValue<[SinkRequestEvent]>([])

    func record(_ event: SinkRequestEvent) {
        events.update { $0.append(event) }
    }

    var count: Int { events.get().count }

    /// The first event after the first `count` ones, waiting up to `timeout` seconds for it.
    func event(after count: Int, timeout: Double) -> SinkRequestEvent? {
        let deadline = MonotonicClock.now() + UInt64(timeout * 1e9)
        while true {
            let all = events.get()
            if all.count > count { return all[count] }
            if MonotonicClock.now() > deadline { return nil }
            MonotonicClock.sleep(seconds: 0.005)
        }
    }

    /// The events after the first `count` ones, waiting up to `timeout` seconds until their
    /// bodies add up to at least `bytes` (a client reports success only after the sink's
    /// answer, so normally they already do).
    func events(after count: Int, totalling bytes: Int, timeout: Double) -> ArraySlice<SinkRequestEvent> {
        let deadline = MonotonicClock.now() + UInt64(timeout * 1e9)
        while true {
            let all = events.get()
            let new = all.count > count ? all[count...] : []
            if new.reduce(0, { $0 + $1.bodyByteCount }) >= bytes || MonotonicClock.now() > deadline { return new }
            MonotonicClock.sleep(seconds: 0.005)
        }
    }
}
