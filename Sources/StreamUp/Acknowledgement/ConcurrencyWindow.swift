/// How many plain requests may be out at once, adapted to the answers the way Vector's
/// adaptive request concurrency does: it starts at one, grows by one while answers come back
/// 2xx and no slower than usual with the window in use, and shrinks by a factor on an
/// overload (429, 503, a timeout, a broken connection) or on answer times that rise well above
/// their running mean. It never goes past `maximum` (`--max-in-flight`); not adaptive, it
/// stays there.
///
/// Answer times are a smoothed mean and deviation (exponentially weighted): an answer slower
/// than the mean by more than `deviationScale` deviations (and by at least `slack`, so the
/// jitter of a loopback receiver does not count) is a rising answer time.
///
/// Thread safety: a value type, part of the machine.
struct ConcurrencyWindow: Equatable {
    let maximum: Int
    let adaptive: Bool
    /// How many requests may be out now.
    private(set) var limit: Int
    /// The smoothed answer time and its deviation, in seconds (nil: no answer yet).
    private(set) var meanAnswerTime: Double?
    private var deviation = 0.0
    /// 2xx answers since the limit last changed: one limit's worth of them raises it by one.
    private var answersSinceChange = 0
    /// Answers still due from requests sent before the last decrease: their overloads say
    /// nothing new, so they do not decrease it again.
    private var dueBeforeDecrease = 0

    static var smoothing: Double { 0.4 }
    static var deviationScale: Double { 2.5 }
    static var decreaseRatio: Double { 0.5 }
    /// Answer times within this much of the mean never count as rising.
    static var slack: Double { 0.005 }

    init(maximum: Int, adaptive: Bool) {
        self.maximum = max(1, maximum)
        self.adaptive = adaptive
        self.limit = adaptive ? 1 : max(1, maximum)
    }

    /// A 2xx came after `took` (nil: not measured).
    mutating func answered(in took: Duration?) {
        guard adaptive else { return }
        dueBeforeDecrease = max(0, dueBeforeDecrease - 1)
        guard let took else { return grow() }
        let seconds = took.seconds
        guard let mean = meanAnswerTime else {
            meanAnswerTime = seconds
            return grow()
        }
        let rising = seconds > mean + max(Self.slack, Self.deviationScale * deviation)
        deviation += Self.smoothing * (abs(seconds - mean) - deviation)
        meanAnswerTime = mean + Self.smoothing * (seconds - mean)
        if rising { shrink() } else { grow() }
    }

    /// The receiver or the way to it is overloaded.
    mutating func overloaded() {
        guard adaptive else { return }
        shrink()
        dueBeforeDecrease = max(0, dueBeforeDecrease - 1)
    }

    private mutating func grow() {
        answersSinceChange += 1
        guard answersSinceChange >= limit, limit < maximum else { return }
        limit += 1
        answersSinceChange = 0
    }

    private mutating func shrink() {
        guard dueBeforeDecrease == 0 else { return }
        dueBeforeDecrease = limit
        limit = max(1, Int((Double(limit) * Self.decreaseRatio).rounded(.down)))
        answersSinceChange = 0
    }
}
