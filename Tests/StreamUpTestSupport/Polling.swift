import Foundation

// The one way the tests wait: check a condition (at most 5 ms apart) until it holds or a
// deadline passes. The deadline is a limit for a hang, not a speed requirement: it is scaled
// by ``TestTime`` (STREAMUP_TEST_TIME_SCALE) and defaults to 20 s.
//
// Each wait has an async form (it sleeps the task between checks, so it never blocks one of
// the few cooperative threads) and a blocking form for synchronous tests and threads of their
// own. Await the event where one exists; poll what cannot be awaited (a file's contents, a
// counter another process moves). Every function here may be called from any thread.

/// The pause after the first check: it doubles after each miss up to ``longestPause``, so a
/// condition that holds a moment later is seen at once and a long wait costs little.
private let firstPause = Duration.microseconds(50)
private let longestPause = Duration.milliseconds(5)

/// Checks `check` until it returns a value, or until `within` (scaled) has passed; returns the
/// value, or nil at the deadline.
public func poll<T>(within timeout: Duration = .seconds(20), _ check: () throws -> T?) async rethrows -> T? {
    let deadline = ContinuousClock.now + TestTime.scaled(timeout)
    var pause = firstPause
    while true {
        if let value = try check() { return value }
        if ContinuousClock.now >= deadline { return nil }
        try? await Task.sleep(for: pause)
        pause = min(pause * 2, longestPause)
    }
}

/// The blocking form of ``poll(within:_:)-async``: sleeps the calling thread between checks.
public func poll<T>(within timeout: Duration = .seconds(20), _ check: () throws -> T?) rethrows -> T? {
    let deadline = ContinuousClock.now + TestTime.scaled(timeout)
    var pause = firstPause
    while true {
        if let value = try check() { return value }
        if ContinuousClock.now >= deadline { return nil }
        Thread.sleep(forTimeInterval: Double(pause.components.attoseconds) / 1e18)
        pause = min(pause * 2, longestPause)
    }
}

/// Waits until `condition` holds, or `within` (scaled) passes; returns whether it held.
/// Use as `#expect(await eventually { … })` or `try #require(await eventually { … })`.
public func eventually(within timeout: Duration = .seconds(20), _ condition: () throws -> Bool) async rethrows -> Bool {
    try await poll(within: timeout) { try condition() ? true : nil } ?? false
}

/// The blocking form of ``eventually(within:_:)-async``.
public func eventually(within timeout: Duration = .seconds(20), _ condition: () throws -> Bool) rethrows -> Bool {
    try poll(within: timeout) { try condition() ? true : nil } ?? false
}

/// Waits until `condition` holds, or throws ``TimedOut`` at the deadline (`within`, scaled).
public func waitUntil(within timeout: Duration = .seconds(20), _ condition: () throws -> Bool) async throws {
    guard try await eventually(within: timeout, condition) else { throw TimedOut() }
}

/// A wait whose condition did not hold before its deadline.
///
/// Thread safety: a value type.
public struct TimedOut: Error, CustomStringConvertible {
    /// What was awaited, e.g. "3 events; have 1".
    public var what: String

    public init(_ what: String = "the condition") {
        self.what = what
    }

    public var description: String { "timed out waiting for \(what)" }
}
