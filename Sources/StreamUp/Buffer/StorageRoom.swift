#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether a storage's disk has room, as its writes find it: a pure state machine that turns
/// writes failing for lack of room (ENOSPC, EDQUOT) into a wait with a bounded backoff, and
/// says when a spell of it begins and ends (one line each, however many writes fail).
///
/// The writer keeps the bytes it could not write and tries again at ``writeFailed(now:)``'s
/// instant (or sooner, when an acknowledgement frees some of the storage's own room); the
/// delay doubles from ``firstDelay`` up to ``maxDelay``, so that space freed on the disk is used
/// within ``maxDelay`` and a disk that stays full costs a write every ``maxDelay``.
///
/// Thread safety: a value type; the spool keeps it under a lock of its own.
struct StorageRoom: Equatable {
    enum State: Equatable {
        /// Writes work.
        case writing
        /// Writes fail for lack of room since `since`; `failures` in a row so far.
        case full(since: UploadClock.Instant, failures: Int)
    }

    /// The wait after the first failure of a spell.
    let firstDelay: Duration
    /// The longest wait between two tries.
    let maxDelay: Duration
    private(set) var state: State = .writing

    init(firstDelay: Duration = .milliseconds(100), maxDelay: Duration = .seconds(2)) {
        precondition(firstDelay > .zero && firstDelay <= maxDelay, "the first delay must be positive and at most the longest")
        self.firstDelay = firstDelay
        self.maxDelay = maxDelay
    }

    var isFull: Bool { state != .writing }

    /// A write failed for lack of room at `now`: when to try again, and whether a spell of
    /// full disk began with it (then it is said).
    mutating func writeFailed(now: UploadClock.Instant) -> (retryAt: UploadClock.Instant, began: Bool) {
        switch state {
        case .writing:
            state = .full(since: now, failures: 1)
            return (now.advanced(by: firstDelay), true)
        case .full(let since, let failures):
            state = .full(since: since, failures: failures + 1)
            return (now.advanced(by: delay(after: failures + 1)), false)
        }
    }

    /// A write worked at `now`: how long the disk had been full, when it had been (then that is
    /// said); nil when writes were working.
    mutating func wrote(now: UploadClock.Instant) -> Duration? {
        switch state {
        case .writing:
            return nil
        case .full(let since, _):
            state = .writing
            return since.duration(to: now)
        }
    }

    /// The wait after `failures` failures in a row: `firstDelay` doubled for each one after the
    /// first, at most `maxDelay`.
    func delay(after failures: Int) -> Duration {
        var delay = firstDelay
        for _ in 1..<max(1, failures) {
            delay *= 2
            if delay >= maxDelay { return maxDelay }
        }
        return min(delay, maxDelay)
    }
}

extension StreamUpError {
    /// Whether this is a write that failed for lack of room (ENOSPC, EDQUOT): the disk is full,
    /// and the same write may work once space comes back.
    var isOutOfRoom: Bool {
        errno == ENOSPC || errno == EDQUOT
    }
}
