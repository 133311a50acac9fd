import Testing

@testable import StreamUpHTTP

/// `Duration` as seconds and nanoseconds, the one conversion every target uses.
@Suite struct DurationSecondsTests {
    /// Whole and fractional parts both count; negative durations stay negative.
    @Test func secondsIncludeTheFraction() {
        #expect(Duration.milliseconds(1_500).seconds == 1.5)
        #expect(Duration.seconds(3).seconds == 3)
        #expect(Duration.microseconds(-250).seconds == -0.000_25)
        #expect(Duration.zero.seconds == 0)
    }

    /// Nanoseconds truncate what is below a nanosecond.
    @Test func nanosecondsTruncate() {
        #expect(Duration.seconds(2).nanoseconds == 2_000_000_000)
        #expect((Duration.nanoseconds(7) + .init(secondsComponent: 0, attosecondsComponent: 999_999_999)).nanoseconds == 7)
    }
}
