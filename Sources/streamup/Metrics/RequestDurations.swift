import Foundation

/// How long requests took from their start to their answer's head, as a Prometheus histogram
/// (`streamup_request_duration_seconds`). Answers are paired with requests in the order they
/// started (a window of several in flight mostly answers in order); a request that ended
/// without an answer is dropped from the pairing when its retry is announced, and is not
/// observed (it is counted as `status="none"` in `streamup_requests_total`).
///
/// Thread safety: a value type, kept in ``Metrics``' state under its lock.
struct RequestDurations {
    typealias Instant = ContinuousClock.Instant

    /// Upper bounds in seconds: from a loopback answer to the 60 s default response timeout.
    static let bounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]
    /// Requests remembered at most (a request whose answer never came is forgotten past it).
    static let limit = 64

    private var started: [Instant] = []
    private var counts = [Int](repeating: 0, count: bounds.count)
    private var total = 0
    private var sum = 0.0

    /// A request started at `now`.
    mutating func requestStarted(at now: Instant) {
        if started.count >= Self.limit { started.removeFirst() }
        started.append(now)
    }

    /// The oldest request got its answer at `now`.
    mutating func answered(at now: Instant) {
        guard !started.isEmpty else { return }
        let seconds = (now - started.removeFirst()).seconds
        total += 1
        sum += seconds
        for (index, bound) in Self.bounds.enumerated() where seconds <= bound { counts[index] += 1 }
    }

    /// The oldest request ended without an answer.
    mutating func unanswered() {
        if !started.isEmpty { started.removeFirst() }
    }

    /// The histogram's family.
    var family: MetricFamily {
        var samples = zip(Self.bounds, counts).map { bound, count in
            MetricFamily.Sample(suffix: "_bucket", labels: [MetricFamily.Label(name: "le", value: "\(bound)")], value: "\(count)")
        }
        samples.append(MetricFamily.Sample(suffix: "_bucket", labels: [MetricFamily.Label(name: "le", value: "+Inf")], value: "\(total)"))
        samples.append(MetricFamily.Sample(suffix: "_sum", value: String(format: "%.6f", sum)))
        samples.append(MetricFamily.Sample(suffix: "_count", value: "\(total)"))
        return MetricFamily(
            name: "streamup_request_duration_seconds", kind: .histogram,
            help: "Time from a request's start to its answer's head (requests that got no answer are not observed).", samples: samples)
    }
}
