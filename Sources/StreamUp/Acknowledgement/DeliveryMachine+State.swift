/// The machine's state besides its segments, each piece a value with the fields that go
/// together and the moments it is reset in its methods. All of them are owned by the
/// ``DeliveryMachine`` that holds them (a value confined to the uploader's delivery task).
extension DeliveryMachine {
    /// What the machine is doing besides its segments: going on, waiting out a backoff after a
    /// failure, or holding an action that comes next whatever else is there.
    enum Course {
        case running
        /// Backing off after a failure until this instant (a retry comes after it).
        case backingOff(until: Instant)
        /// A resumable upload's segment refused for good, to set aside before anything else
        /// (plain segments wait in the window instead).
        case settingAside(from: Int, carried: Range<Int>, limits: SegmentLimits, reason: String)
        /// The upload stops: every `next` says so.
        case stopped(Stop)
    }

    /// The retry budget: failed attempts since the last acknowledged progress, and since when
    /// they have gone on. A retried failure spends it; progress (a 2xx that acknowledges, a
    /// segment set aside) refills it.
    struct RetryBudget {
        /// Failed attempts since the last acknowledged progress.
        private(set) var failures = 0
        /// Since when failures have gone on without progress (for `maxRetryTime`).
        private(set) var failingSince: Instant?

        mutating func spend(now: Instant) {
            failures += 1
            failingSince = failingSince ?? now
        }

        mutating func refill() {
            self = RetryBudget()
        }

        /// Whether `policy` gives up now (too many failures, or failing too long).
        func isSpent(by policy: RetryPolicy, now: Instant) -> Bool {
            if let maxRetries = policy.maxRetries, failures > maxRetries { return true }
            if let limit = policy.maxRetryTime, let since = failingSince, since.duration(to: now) >= limit { return true }
            return false
        }

        /// `delay`, never past what is left of the policy's `maxRetryTime`.
        func limit(_ delay: Duration, by policy: RetryPolicy, now: Instant) -> Duration {
            guard let limit = policy.maxRetryTime, let since = failingSince else { return delay }
            return max(.zero, min(delay, limit - since.duration(to: now)))
        }
    }

    /// The failing spell a person hears about: it starts with the first retried failure, is
    /// reported again once a `reportEvery` while it lasts, and ends (reported recovered) once a
    /// success comes `quietPeriod` after its last failure, or when the upload ends, so a flaky
    /// link gets one pair of lines, not one per blip, and a long outage is never silent.
    struct FailingSpell {
        /// A spell under way.
        struct Spell {
            var start: Instant
            var lastFailure: Instant
            /// Retried failures in it.
            var attempts: Int
            /// Bytes sent again in it that the receiver may have stored before.
            var resent: Int
            /// When it was last reported.
            var reported: Instant
            /// The first success after its last failure (nil: none yet), where the outage ended.
            var firstSuccess: Instant?
        }

        let quietPeriod: Duration
        let reportEvery: Duration
        /// The spell under way (nil: delivery works).
        private(set) var spell: Spell?

        /// Counts a retried failure (said as `reason`); returns whether it starts the spell, and
        /// the notice that it goes on when one is due. A failure another endpoint takes over at
        /// once (`elsewhere`) is that endpoint's to report: it starts no spell.
        mutating func failed(_ reason: String, now: Instant, elsewhere: Bool) -> (first: Bool, notice: Notice?) {
            let first = spell == nil && !elsewhere
            if !elsewhere || spell != nil {
                spell = Spell(
                    start: spell?.start ?? now, lastFailure: now, attempts: (spell?.attempts ?? 0) + 1, resent: spell?.resent ?? 0,
                    reported: spell?.reported ?? now)
            }
            guard !first, let spell, spell.reported.duration(to: now) >= reportEvery else { return (first, nil) }
            self.spell?.reported = now
            return (first, .stillFailing(reason: reason, failedAttempts: spell.attempts, failingFor: spell.start.duration(to: now)))
        }

        /// Counts bytes sent again that the receiver may have stored before.
        mutating func resent(_ bytes: Int) {
            spell?.resent += bytes
        }

        /// A success: the spell ends if it came `quietPeriod` after the last failure.
        mutating func succeeded(now: Instant) -> Notice? {
            guard spell != nil else { return nil }
            if spell?.firstSuccess == nil { spell?.firstSuccess = now }
            guard let spell, spell.lastFailure.duration(to: now) >= quietPeriod else { return nil }
            return end()
        }

        /// Ends the spell, if any, with its notice: how long delivery failed, from the first
        /// failure to the first success after the last one (or to the last failure, when the
        /// upload ends without one).
        mutating func end() -> Notice? {
            guard let spell else { return nil }
            self.spell = nil
            let after = spell.start.duration(to: spell.firstSuccess ?? spell.lastFailure)
            return .recovered(failedAttempts: spell.attempts, resentBytes: spell.resent, after: after)
        }
    }

    /// Trouble with the segments being retried, each kept with the start of the segment it is
    /// about, until a success: the first 429 to a segment (another one a while later makes
    /// segments smaller), and how many times in a row each segment's connection broke while it
    /// carried bytes (a few make it smaller). Kept per segment: with several out at once, their
    /// resends take turns, and a record that started again whenever another segment failed
    /// would never reach its limit.
    struct SegmentTrouble {
        /// The time of the first 429 to the segment from each start since the last success or
        /// its shrink.
        private var rateRefusals: [Int: Instant] = [:]
        /// How many times in a row the connection of the segment from each start broke.
        private var breaks: [Int: Int] = [:]

        /// A 429 to the segment from `from`: whether it is refused for its size (an earlier 429
        /// to it came `window` or more before, and it is not a `loneRecord`). Then its window
        /// starts again now.
        mutating func refusedForSize(from: Int, now: Instant, window: Duration, loneRecord: Bool) -> Bool {
            guard let first = rateRefusals[from] else {
                rateRefusals[from] = now
                return false
            }
            guard first.duration(to: now) >= window, !loneRecord else { return false }
            rateRefusals[from] = now
            return true
        }

        /// The connection of the segment from `from` broke: whether that is the `limit`th time
        /// in a row (then the count starts again).
        mutating func broke(from: Int, limit: Int) -> Bool {
            let count = breaks[from, default: 0] + 1
            breaks[from] = count >= limit ? nil : count
            return count >= limit
        }

        mutating func clear() {
            self = SegmentTrouble()
        }
    }

    /// What this run's requests carried, for ``DeliveryMachine/resentBytes`` and the failing
    /// spell's resent bytes.
    struct SentLog {
        /// What an earlier run sent (`alreadySent`, from a spool): all of it counts as sent.
        let firstSent: Int
        /// The highest stream offset any request carried (an earlier run's counts).
        private(set) var highest: Int
        /// Bytes sent more than once.
        private(set) var resent = 0
        /// The stream ranges this run's requests carried above `firstSent` and above the
        /// acknowledged offset, merged.
        private var ranges: [Range<Int>] = []
        /// The end of the furthest plain request the receiver may have stored without saying
        /// so (no answer came, or a 5xx): bytes resent below it may be held twice.
        private var maybeStoredEnd = 0

        init(alreadySent: Int) {
            firstSent = alreadySent
            highest = alreadySent
        }

        /// The receiver may hold what a request carried up to `end` without having said so.
        mutating func mayHaveStored(upTo end: Int) {
            maybeStoredEnd = max(maybeStoredEnd, end)
        }

        /// Counts a request that carried `carried`; returns how many of its bytes the receiver
        /// may hold already.
        mutating func note(_ carried: Range<Int>, acknowledged: Int) -> Int {
            // Sent before: below what an earlier run sent, or within a range a request of this
            // run carried (answers of a window come back in any order).
            var again = max(0, min(carried.upperBound, firstSent) - carried.lowerBound)
            for sent in ranges where sent.overlaps(carried) {
                again += min(sent.upperBound, carried.upperBound) - max(sent.lowerBound, carried.lowerBound, firstSent)
            }
            again = max(0, again)
            ranges.removeAll { $0.upperBound <= acknowledged }
            if carried.upperBound > firstSent { ranges = Self.adding(max(carried.lowerBound, firstSent)..<carried.upperBound, to: ranges) }
            resent += again
            highest = max(highest, carried.upperBound)
            return max(0, min(carried.upperBound, maybeStoredEnd) - carried.lowerBound)
        }

        /// `ranges` (sorted, apart) with `range` merged in.
        static func adding(_ range: Range<Int>, to ranges: [Range<Int>]) -> [Range<Int>] {
            var merged = range
            var result: [Range<Int>] = []
            for other in ranges {
                if other.upperBound < merged.lowerBound || other.lowerBound > merged.upperBound {
                    result.append(other)
                } else {
                    merged = min(merged.lowerBound, other.lowerBound)..<max(merged.upperBound, other.upperBound)
                }
            }
            result.append(merged)
            return result.sorted { $0.lowerBound < $1.lowerBound }
        }
    }
}
