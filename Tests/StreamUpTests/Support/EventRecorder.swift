import Foundation

/// Records a stream's delegate events, with the thread each arrived on, and lets a test wait
/// (with a deadline) until a given event has arrived.
///
/// Thread safety: guarded by `condition`; events may arrive on any thread.
final class EventRecorder: NSObject, StreamDelegate, @unchecked Sendable {
    struct Arrival {
        let event: Stream.Event
        let threadName: String?
        let onMainThread: Bool
        let queueMarker: String?
        let thread: pthread_t
    }

    static let queueKey = DispatchSpecificKey<String>()
    private let condition = NSCondition()
    private var arrivals: [Arrival] = []

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        condition.lock()
        arrivals.append(Arrival(
            event: eventCode, threadName: Thread.current.name, onMainThread: Thread.isMainThread,
            queueMarker: DispatchQueue.getSpecific(key: Self.queueKey), thread: pthread_self()))
        condition.broadcast()
        condition.unlock()
    }

    var events: [Stream.Event] {
        condition.lock()
        defer { condition.unlock() }
        return arrivals.map(\.event)
    }

    /// Waits until `event` has arrived `count` times in all; returns its latest arrival, or nil
    /// if the deadline passed first.
    @discardableResult
    func waitFor(_ event: Stream.Event, count: Int = 1, timeout: TimeInterval = 10) -> Arrival? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while arrivals.filter({ $0.event == event }).count < count {
            if !condition.wait(until: deadline) { return nil }
        }
        return arrivals.last { $0.event == event }
    }
}
