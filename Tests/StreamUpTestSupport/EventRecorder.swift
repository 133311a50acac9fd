/// Collects events that arrive on any thread (a server's `onEvent`, a stream delegate's calls)
/// and lets a test wait, with a deadline, until the ones it expects have arrived.
///
/// Thread safety: guarded by the `events` lock (``Locked``); callable from any thread.
public final class EventRecorder<Event: Sendable>: Sendable {
    private let events = Locked<[Event]>([])

    public init() {}

    /// Adds `event`.
    public func record(_ event: Event) {
        events.withLock { $0.append(event) }
    }

    /// A closure that records its argument (pass it as a server's `onEvent`).
    public var handler: @Sendable (Event) -> Void {
        { [self] event in record(event) }
    }

    /// Every event so far, in order of arrival.
    public var all: [Event] {
        events.withLock { $0 }
    }

    /// Waits until at least `count` events arrived; returns them all, or throws ``TimedOut``.
    @discardableResult
    public func wait(for count: Int, within timeout: Duration = .seconds(20)) throws -> [Event] {
        guard
            let arrived = poll(
                within: timeout,
                {
                    let all = self.all
                    return all.count >= count ? all : nil
                })
        else {
            throw TimedOut("\(count) events; have \(all.count)")
        }
        return arrived
    }

    /// Waits until at least `count` events arrived; returns them all, or throws ``TimedOut``.
    @discardableResult
    public func wait(for count: Int, within timeout: Duration = .seconds(20)) async throws -> [Event] {
        guard
            let arrived = await poll(
                within: timeout,
                {
                    let all = self.all
                    return all.count >= count ? all : nil
                })
        else {
            throw TimedOut("\(count) events; have \(all.count)")
        }
        return arrived
    }

    /// Waits until `count` events in all match `matching`; returns the latest of them, or nil
    /// at the deadline.
    public func waitFor(count: Int = 1, within timeout: Duration = .seconds(20), _ matching: (Event) -> Bool) -> Event? {
        poll(within: timeout) {
            let found = all.filter(matching)
            return found.count >= count ? found.last : nil
        }
    }
}
