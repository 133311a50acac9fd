import Foundation
import StreamUpTestSupport

/// A stream delegate that records each event with the thread it arrived on (in an
/// ``EventRecorder``), so a test can wait, with a deadline, until a given event has arrived.
///
/// Thread safety: the arrivals are kept by the recorder's lock and the per-event counts by the
/// `counts` lock; `stream(_:handle:)` may be called on any thread.
final class StreamEventRecorder: NSObject, StreamDelegate, Sendable {
    /// One delegate call and where it ran.
    ///
    /// Thread safety: a value type.
    struct Arrival: @unchecked Sendable {  // Stream.Event is a plain option set of integers
        let event: Stream.Event
        let threadName: String?
        let onMainThread: Bool
        let queueMarker: String?
        let thread: pthread_t
    }

    static let queueKey = DispatchSpecificKey<String>()
    private let arrivals = EventRecorder<Arrival>()
    /// Arrivals so far by event, so a wait costs the same after thousands of events.
    private let counts = Locked<[UInt: Int]>([:])

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        arrivals.record(
            Arrival(
                event: eventCode, threadName: Thread.current.name, onMainThread: Thread.isMainThread,
                queueMarker: DispatchQueue.getSpecific(key: Self.queueKey), thread: pthread_self()))
        counts.withLock { $0[eventCode.rawValue, default: 0] += 1 }
    }

    var events: [Stream.Event] {
        arrivals.all.map(\.event)
    }

    /// Waits until `event` has arrived `count` times in all; returns its latest arrival, or nil
    /// if the deadline (scaled by STREAMUP_TEST_TIME_SCALE) passed first.
    @discardableResult
    func waitFor(_ event: Stream.Event, count: Int = 1, within timeout: Duration = .seconds(10)) -> Arrival? {
        guard eventually(within: timeout, { counts.withLock { $0[event.rawValue, default: 0] } >= count }) else { return nil }
        return arrivals.all.last { $0.event == event }
    }
}
