import StreamUpHTTP

/// The three clocks of one connection, as a pure value the connection feeds with what happened
/// and asks how long it may wait for the next byte:
///
/// - idle: ``SinkConfiguration/idleTimeout`` since the last byte, whatever the connection is doing;
/// - request head: ``SinkConfiguration/headTimeout`` for the whole head, counted from the
///   connection's start for its first request and from the first byte of each later one (the
///   wait between requests on a kept-alive connection is the idle timeout's);
/// - body rate: ``SinkConfiguration/minimumBodyRate``, credit spent only while the client owes
///   announced bytes (see ``SinkBodyRate``).
///
/// ```
///  accept ──head clock──▶ head ──rate credit (owed waits only)──▶ end ──idle──▶ 1st byte ──head clock──▶ …
/// ```
///
/// Thread safety: a value type that is never shared; owned by one connection.
struct ConnectionDeadlines {
    /// Which clock ran out.
    enum Expiry: Equatable {
        case idle
        case head
        case bodyRate
    }

    typealias Instant = ContinuousClock.Instant

    let idleTimeout: Duration
    let headTimeout: Duration
    let bodyRate: SinkBodyRate?
    private(set) var lastActivity: Instant
    /// When the head being waited for must be complete; `nil` while no head is due.
    private(set) var headDeadline: Instant?
    /// Body-rate credit left for the request in flight.
    private(set) var credit: Duration

    /// The clocks of a connection that started at `start`: its first head is due from then.
    init(idleTimeout: Duration, headTimeout: Duration, bodyRate: SinkBodyRate?, start: Instant) {
        self.idleTimeout = idleTimeout
        self.headTimeout = headTimeout
        self.bodyRate = bodyRate
        lastActivity = start
        headDeadline = start + headTimeout
        credit = bodyRate?.grace ?? .zero
    }

    /// The sink waited `duration` for bytes; `owed` when the client owed them then.
    mutating func waited(_ duration: Duration, owed: Bool) {
        if owed, bodyRate != nil {
            credit -= duration
        }
    }

    /// `count` bytes arrived at `now`.
    mutating func received(_ count: Int, at now: Instant) {
        lastActivity = now
        guard let bodyRate, count > 0 else { return }
        let earned = credit + .seconds(Double(count) / Double(bodyRate.bytesPerSecond))
        // Credit above the window is never earned, but the grace may start above it.
        credit = earned > bodyRate.window ? max(credit, bodyRate.window) : earned
    }

    /// The sink itself paused for `duration` (an injected read throttle): the idle and head
    /// clocks move by as much, since the client was not the one keeping anyone waiting. (The
    /// body-rate credit needs no such care: it is only spent on waits for bytes.)
    mutating func sinkPaused(for duration: Duration) {
        lastActivity += duration
        if let headDeadline {
            self.headDeadline = headDeadline + duration
        }
    }

    /// The first byte of a request on a kept-alive connection arrived at `now`: its head is due.
    mutating func messageStarted(at now: Instant) {
        if headDeadline == nil {
            headDeadline = now + headTimeout
        }
    }

    /// A head arrived: its body starts with a fresh grace.
    mutating func headArrived() {
        headDeadline = nil
        credit = bodyRate?.grace ?? .zero
    }

    /// A request ended; the connection now waits, idle, for the next one.
    mutating func messageEnded() {
        headDeadline = nil
    }

    /// The clock that has run out at `now`, if any, while the parser stands at `progress`.
    func expiry(at now: Instant, progress: HTTPRequestParser.Progress) -> Expiry? {
        if now - lastActivity >= idleTimeout { return .idle }
        if let headDeadline, now >= headDeadline { return .head }
        if bodyRate != nil, progress == .owingBody, credit <= .zero { return .bodyRate }
        return nil
    }

    /// How long the next read may block before a clock runs out (at least 1 ms); call after
    /// ``expiry(at:progress:)`` returned `nil`.
    func wait(at now: Instant, progress: HTTPRequestParser.Progress) -> Duration {
        var wait = idleTimeout - (now - lastActivity)
        if let headDeadline {
            wait = min(wait, headDeadline - now)
        }
        if bodyRate != nil, progress == .owingBody {
            wait = min(wait, credit)
        }
        return max(wait, .milliseconds(1))
    }
}
