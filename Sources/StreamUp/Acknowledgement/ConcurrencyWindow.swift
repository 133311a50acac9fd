/// How many plain requests may be out at once, adapted to the answers the way Vector's
/// adaptive request concurrency does: it starts at one, grows by one while answers come back
/// 2xx and no slower than usual with the window in use, and shrinks by a factor on an
/// overload (429, 503, a timeout, a broken connection) or on answer times that rise well above
/// their running mean. It never goes past `maximum` (`--max-in-flight`); not adaptive, it
/// stays there.
///
/// Answer times are judged a period at a time: a period is one limit's worth of 2xx answers,
/// and its mean answer time is compared with the smoothed mean and deviation of the periods
/// before (exponentially weighted). A period slower than that mean by more than
/// `deviationScale` deviations (and by at least `slack`, so the jitter of a loopback receiver
/// does not count) is a rising answer time; any other period grows the limit by one. One slow
/// answer among fast ones is noise (a busy machine delays a single transfer by a few
/// milliseconds): judged alone, it halved a window of 8 every third of a second against a
/// receiver whose answer time never changed.
///
/// Thread safety: a value type, part of the machine.
struct ConcurrencyWindow: Equatable {
    let maximum: Int
    let adaptive: Bool
    /// How many requests may be out now.
    private(set) var limit: Int
    /// The smoothed answer time of the periods so far and its deviation, in seconds (nil: no
    /// period has ended yet).
    private(set) var meanAnswerTime: Double?
    private var deviation = 0.0
    /// 2xx answers in the current period (it ends at one limit's worth), and the total and
    /// number of their measured answer times.
    private var answersSinceChange = 0
    private var periodTime = 0.0
    private var periodMeasured = 0
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

    /// A 2xx came after `took` (nil: not measured). The answer that ends a period grows the
    /// limit, or shrinks it when the period's answers came back slower than usual.
    mutating func answered(in took: Duration?) {
        guard adaptive else { return }
        dueBeforeDecrease = max(0, dueBeforeDecrease - 1)
        answersSinceChange += 1
        if let took {
            periodTime += took.seconds
            periodMeasured += 1
        }
        guard answersSinceChange >= limit else { return }
        let rising = periodMeasured > 0 && isRising(periodTime / Double(periodMeasured))
        answersSinceChange = 0
        periodTime = 0
        periodMeasured = 0
        if rising { shrink() } else if limit < maximum { limit += 1 }
    }

    /// Whether a period whose answers took `seconds` on average is well above the periods
    /// before it; the period joins the running mean.
    private mutating func isRising(_ seconds: Double) -> Bool {
        guard let mean = meanAnswerTime else {
            meanAnswerTime = seconds
            return false
        }
        let rising = seconds > mean + max(Self.slack, Self.deviationScale * deviation)
        deviation += Self.smoothing * (abs(seconds - mean) - deviation)
        meanAnswerTime = mean + Self.smoothing * (seconds - mean)
        return rising
    }

    /// The receiver or the way to it is overloaded.
    mutating func overloaded() {
        guard adaptive else { return }
        shrink()
        dueBeforeDecrease = max(0, dueBeforeDecrease - 1)
    }

    private mutating func shrink() {
        guard dueBeforeDecrease == 0 else { return }
        dueBeforeDecrease = limit
        limit = max(1, Int((Double(limit) * Self.decreaseRatio).rounded(.down)))
        answersSinceChange = 0
        periodTime = 0
        periodMeasured = 0
    }
}
