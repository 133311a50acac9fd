/// The most recent events, oldest dropped first once ``limit`` is reached.
///
/// Thread safety: a value type that is never shared; ``SinkServerContext`` keeps it in its
/// `recentEvents` mutex.
struct RecentEvents {
    let limit: Int
    private var storage: [SinkRequestEvent] = []
    private var start = 0

    init(limit: Int) {
        self.limit = limit
    }

    mutating func append(_ event: SinkRequestEvent) {
        guard limit > 0 else { return }
        if storage.count < limit {
            storage.append(event)
        } else {
            storage[start] = event
            start = (start + 1) % limit
        }
    }

    /// Oldest first.
    var events: [SinkRequestEvent] {
        Array(storage[start...] + storage[..<start])
    }
}
