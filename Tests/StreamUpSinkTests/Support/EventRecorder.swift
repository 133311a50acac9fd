import Dispatch
import StreamUpSystem
import StreamUpSink

/// Collects a server's events and lets a test wait for them without sleeping: ``wait(for:)``
/// blocks until enough events arrived or a 10 s deadline passes.
///
/// Thread safety: guarded by the `events` mutex; callable from any thread.
final class EventRecorder: Sendable {
    private let events = Mutex<[SinkRequestEvent]>([])
    private let arrived = DispatchSemaphore(value: 0)

    /// Pass this as the server's `onEvent`.
    var handler: @Sendable (SinkRequestEvent) -> Void {
        { [self] event in
            events.withLock { $0.append(event) }
            arrived.signal()
        }
    }

    var all: [SinkRequestEvent] {
        events.withLock { $0 }
    }

    /// Waits until at least `count` events arrived; returns them all, or throws at the deadline.
    @discardableResult
    func wait(for count: Int, deadline: Duration = .seconds(10)) throws -> [SinkRequestEvent] {
        let end = DispatchTime.now() + .milliseconds(Int(deadline.components.seconds * 1_000))
        while true {
            let current = all
            if current.count >= count { return current }
            if arrived.wait(timeout: end) == .timedOut {
                throw TestClientError(description: "timed out waiting for \(count) events; have \(all.count)")
            }
        }
    }
}
