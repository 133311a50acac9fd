#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The CPU time one record's filter rules may spend matching (``RecordFilter/timeLimit``),
/// counted while ICU matches.
///
/// `NSRegularExpression.enumerateMatches` with `.reportProgress` calls its block with no result
/// whenever ICU moves its search to the next start position and every 10,000 steps of one match
/// attempt (ICU's match callback: it ticks on each backtracking state it saves), and stops when
/// the block sets `stop`. Each such call is a ``tick()``. Reading the thread's CPU clock is a
/// system call (0.38 µs here, as much as matching a short line), so only every 256th tick reads
/// it, and the budget's start is read at the first of those: a line that ICU finishes in fewer
/// ticks (a log line of up to 255 characters) reads no clock at all, and between two readings
/// lie at most 256 ticks (about 25 ms of backtracking, a fraction of any limit).
///
/// CPU time of the calling thread, not wall time: on a loaded machine the same record keeps the
/// same verdict. The rules run on the producer's thread without suspending, so the thread is the
/// record's.
///
/// Thread safety: a value type, used by one thread for one record.
struct MatchBudget {
    /// Reads elapsed CPU time: the calling thread's, or a test's.
    ///
    /// Thread safety: a value type; the function it holds is callable from any thread.
    struct Meter: Sendable {
        let read: @Sendable () -> Duration

        /// The calling thread's CPU time (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`).
        static let thread = Meter {
            var time = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
            return .seconds(Int64(time.tv_sec)) + .nanoseconds(Int64(time.tv_nsec))
        }
    }

    /// Ticks between two readings of the meter (a power of two).
    static let ticksPerReading = 256

    private let limit: Duration
    private let meter: Meter
    private var ticks = 0
    private var start: Duration?
    /// Whether matching gave up: the time ran out, or ICU abandoned a match.
    private(set) var gaveUp = false
    /// Whether it gave up because the time ran out.
    private(set) var ranOutOfTime = false

    init(limit: Duration, meter: Meter) {
        self.limit = limit
        self.meter = meter
    }

    /// One progress report from ICU; true once matching has given up (then it stops).
    mutating func tick() -> Bool {
        ticks &+= 1
        guard !gaveUp, ticks & (MatchBudget.ticksPerReading - 1) == 0 else { return gaveUp }
        let now = meter.read()
        guard let start else {
            start = now
            return false
        }
        ranOutOfTime = now - start > limit
        gaveUp = ranOutOfTime
        return gaveUp
    }

    /// ICU gave up on a match (its backtracking stack is full, or another internal error): the
    /// rules cannot say what the record holds, as when the time runs out.
    mutating func abandon() {
        gaveUp = true
    }
}
