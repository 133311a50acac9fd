import Foundation

/// How long a test may wait for something before it counts as a hang.
///
/// Every deadline in the tests goes through ``scaled(_:)``, which multiplies it by the number in
/// the environment variable `STREAMUP_TEST_TIME_SCALE` (default 1). A sanitizer build runs
/// several times slower; `STREAMUP_TEST_TIME_SCALE=10 swift test --sanitize=thread` gives every
/// wait ten times longer without changing what any test asserts. Deadlines are limits for a
/// hang, never speed requirements.
///
/// Thread safety: immutable after first use; readable from anywhere.
public enum TestTime {
    /// The factor from `STREAMUP_TEST_TIME_SCALE` (a positive number), or 1.
    public static let scale: Double = {
        guard let text = ProcessInfo.processInfo.environment["STREAMUP_TEST_TIME_SCALE"],
            let value = Double(text), value > 0
        else { return 1 }
        return value
    }()

    /// `duration` times ``scale``.
    public static func scaled(_ duration: Duration) -> Duration {
        duration * scale
    }

    /// `seconds` times ``scale``, for APIs that take a `TimeInterval`.
    public static func scaled(seconds: TimeInterval) -> TimeInterval {
        seconds * scale
    }
}
