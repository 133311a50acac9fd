/// The clock a ``StreamUploader`` measures its segment deadlines, retry backoffs and state
/// checkpoints on: the continuous clock, or a test's manual one. Its instants are the time
/// since the clock was wrapped, so the delivery machine, the endpoints and the buffer share one
/// concrete instant type whatever the clock underneath.
///
/// Thread safety: immutable; callable from any task.
struct UploadClock: Clock {
    /// A point on the wrapped clock: the time since it was wrapped.
    ///
    /// Thread safety: a value type.
    struct Instant: InstantProtocol {
        var elapsed: Duration

        func advanced(by duration: Duration) -> Instant { Instant(elapsed: elapsed + duration) }
        func duration(to other: Instant) -> Duration { other.elapsed - elapsed }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.elapsed < rhs.elapsed }
    }

    private let read: @Sendable () -> Instant
    private let sleeper: @Sendable (Instant) async throws -> Void
    let minimumResolution: Duration

    init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let origin = clock.now
        read = { Instant(elapsed: origin.duration(to: clock.now)) }
        sleeper = { try await clock.sleep(until: origin.advanced(by: $0.elapsed), tolerance: nil) }
        minimumResolution = clock.minimumResolution
    }

    /// The continuous clock, one origin for the whole process.
    static let continuous = UploadClock(ContinuousClock())

    var now: Instant { read() }

    func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try await sleeper(deadline)
    }
}
