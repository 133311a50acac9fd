import Foundation
import Testing

/// The long end-to-end set: process tests that take tens of seconds each (a minute's outage
/// ridden out, `kill -9` three times into a receiver, a link cut every megabyte) and whose
/// behaviour faster tests already show at a lower level (the pure machines on the manual clock,
/// the command matrix). They run when `STREAMUP_LONG_TESTS=1` is in the environment, as
/// `.ci/run` sets it, so CI runs everything; README's `swift test --no-parallel` skips them,
/// each skipped suite or test saying so in one line.
///
/// A suite or test joins the set with one trait: `@Suite(.long, …)` or `@Test(.long, …)`.
///
/// Thread safety: stateless; reads the environment.
public enum LongTests {
    /// The variable that turns the set on.
    public static let variable = "STREAMUP_LONG_TESTS"

    /// Whether the long set runs (`STREAMUP_LONG_TESTS=1`).
    public static var areOn: Bool { ProcessInfo.processInfo.environment[variable] == "1" }

    /// What a skipped suite or test says.
    public static let skipReason: Comment =
        "long end-to-end set, skipped: STREAMUP_LONG_TESTS=1 swift test --no-parallel runs it (as .ci/run does)"
}

extension Trait where Self == ConditionTrait {
    /// Puts a suite or a test in the long end-to-end set (``LongTests``): it runs only with
    /// `STREAMUP_LONG_TESTS=1`.
    public static var long: Self { .enabled(if: LongTests.areOn, LongTests.skipReason) }
}
