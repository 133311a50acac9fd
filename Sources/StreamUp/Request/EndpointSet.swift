import Foundation
import StreamUpHTTP

/// How the segments of one stream are spread over several endpoints.
///
/// Thread safety: a value type.
package enum EndpointChoice: String, Sendable, Hashable, CaseIterable {
    /// Every segment goes to the first endpoint in order that is not set aside; a set-aside one
    /// is probed again by the next segment once its backoff is over, and used again when it
    /// answers.
    case failover
    /// Segments go round robin to the endpoints that are not set aside.
    case balance
}

/// Which of several endpoints the next plain request goes to, as a pure state machine driven by
/// the caller's clock: per endpoint, whether it is set aside and until when (a failure that the
/// retry policy retries sets it aside with a backoff of its own; the next request after that time
/// probes it), and the stretch of the stream it acknowledged under one stream name.
///
/// Stream names: `Streamup-Offset` must grow without gaps at each receiver that de-duplicates
/// (`streamup sink` answers 409 to a gap). A request continuing the stretch its endpoint
/// acknowledged last keeps that stretch's name; any other starts a new stretch, named by the
/// stream offset it starts at (`ID-from-OFFSET`, offsets counted from there; a stretch from 0
/// keeps the plain `ID`). A name always maps an offset to the same stream byte, so a resend to
/// the same receiver (or a restart from a spool) is still dropped as a duplicate there; a
/// segment whose answer was lost at one endpoint and that went to another may be held by both.
///
/// Thread safety: a value type, confined to the uploader's delivery task.
struct EndpointSet<Instant: InstantProtocol> where Instant.Duration == Duration {
    struct Endpoint: Equatable {
        let url: URL
        /// Failures in a row (0: healthy).
        var failures = 0
        /// Set aside until this instant (nil: in use).
        var asideUntil: Instant?
        /// The stream offsets acknowledged under one name, the last stretch (nil: none yet).
        var stretch: Range<Int>?
    }

    private(set) var endpoints: [Endpoint]
    let choice: EndpointChoice
    let retry: RetryPolicy
    /// Chooses within a bound; the set-aside time is between half the backoff bound and all of it.
    let random: @Sendable (Double) -> Double
    /// Balance: where the round robin goes on.
    private var cursor = 0

    /// The endpoints at `urls`, in order.
    init(
        _ urls: [URL], choice: EndpointChoice, retry: RetryPolicy,
        random: @escaping @Sendable (Double) -> Double = { Double.random(in: 0...$0) }
    ) {
        precondition(!urls.isEmpty, "an endpoint set needs an endpoint")
        endpoints = urls.map { Endpoint(url: $0) }
        self.choice = choice
        self.retry = retry
        self.random = random
    }

    var count: Int { endpoints.count }

    func url(_ index: Int) -> URL { endpoints[index].url }

    /// Whether endpoint `index` takes a request now: it is not set aside, or its time is over.
    func isUsable(_ index: Int, now: Instant) -> Bool {
        endpoints[index].asideUntil.map { now >= $0 } ?? true
    }

    /// Whether an endpoint other than `index` takes a request now (a failed segment goes there
    /// at once, without a backoff).
    func hasUsable(besides index: Int, now: Instant) -> Bool {
        endpoints.indices.contains { $0 != index && isUsable($0, now: now) }
    }

    /// The endpoint for the next request: by ``choice`` among the usable ones; when every one is
    /// set aside, the one whose time ends first (the delivery's own backoff spaces those tries).
    mutating func choose(now: Instant) -> Int {
        let order = endpoints.indices.map { choice == .balance ? ($0 + cursor) % count : $0 }
        if let index = order.first(where: { isUsable($0, now: now) }) {
            if choice == .balance { cursor = (index + 1) % count }
            return index
        }
        return endpoints.indices.min { endpoints[$0].asideUntil! < endpoints[$1].asideUntil! }!
    }

    /// Where a request to endpoint `index` whose body starts at stream offset `offset` puts it:
    /// the offset its stretch starts at (the stream name) and the offset within it. A single
    /// endpoint gets the stream's own offsets, always.
    func place(_ index: Int, offset: Int) -> (start: Int, offset: Int) {
        guard count > 1 else { return (0, offset) }
        guard let stretch = endpoints[index].stretch, stretch.upperBound == offset else { return (offset, 0) }
        return (stretch.lowerBound, offset - stretch.lowerBound)
    }

    /// Endpoint `index` answered (whatever it said, it is up) and holds the stream offsets
    /// `carried` when the answer was a 2xx (empty: nothing more). Returns whether it had been set
    /// aside (it is back).
    mutating func succeeded(_ index: Int, carried: Range<Int>, now: Instant) -> Bool {
        let wasAside = endpoints[index].failures > 0
        endpoints[index].failures = 0
        endpoints[index].asideUntil = nil
        if !carried.isEmpty {
            let start = place(index, offset: carried.lowerBound).start
            endpoints[index].stretch = start..<carried.upperBound
        }
        return wasAside
    }

    /// Endpoint `index` failed in a way that is retried (no answer, 429, 5xx): it is set aside
    /// for a backoff that grows with its failures in a row (or `Retry-After`). Returns how long,
    /// and whether it had been in use (the first failure of a spell).
    mutating func failed(_ index: Int, retryAfter: String? = nil, now: Instant) -> (aside: Duration, first: Bool) {
        endpoints[index].failures += 1
        let failures = endpoints[index].failures
        let random = self.random
        let aside = retry.delay(attempt: failures, retryAfter: retryAfter, random: { $0 / 2 + random($0 / 2) })
        endpoints[index].asideUntil = now.advanced(by: aside)
        return (aside, failures == 1)
    }
}
