import Foundation
import StreamUpTestSupport
import Testing

/// Runs the rows of one matrix test several at a time, although the test runner runs test cases
/// one at a time (`swift test --no-parallel`, README's command and CI's).
///
/// The first test case of a matrix test starts every row of that test in the background, at
/// most ``limit`` at once, in table order; each test case then waits for its own row's
/// ``RowReport`` and records the row's problems as its own issues, so every row stays a test
/// case of its own and a failure is reported against its row. A row spends most of its time
/// waiting (a segment's second, a process starting, a receiver answering), so rows side by side
/// take about the time of the slowest few, not the sum: one at a time the 263 rows took about
/// 10 minutes here.
///
/// Thread safety: an actor.
actor MatrixRun {
    /// Rows at once: each holds streamup and its receiver (a validator's namespace, a sink, or a
    /// ClickHouse server of its own) on a 2-core machine.
    static let limit = 4
    static let shared = MatrixRun()

    /// Each row's report once it has run, by its description.
    private var reports: [String: RowReport] = [:]
    /// Test cases waiting for a row that is still running.
    private var waiting: [String: [CheckedContinuation<RowReport, Never>]] = [:]
    /// The rows started so far (each row runs once per test run).
    private var started: Set<String> = []

    /// The report of `row`, one of `rows` (its test's arguments), all of which are started if
    /// they have not been.
    func report(of row: MatrixRow, among rows: [MatrixRow], check: @escaping @Sendable (MatrixRow, RowReport) async throws -> Void) async -> RowReport {
        let key = row.testDescription
        if !started.contains(key) {
            let batch = rows.contains { $0.testDescription == key } ? rows : [row]
            start(batch.filter { !started.contains($0.testDescription) }, check: check)
        }
        if let report = reports[key] { return report }
        return await withCheckedContinuation { waiting[key, default: []].append($0) }
    }

    private func start(_ rows: [MatrixRow], check: @escaping @Sendable (MatrixRow, RowReport) async throws -> Void) {
        for row in rows { started.insert(row.testDescription) }
        Task {
            await withTaskGroup(of: Void.self) { group in
                var running = 0
                for row in rows {
                    if running == Self.limit {
                        await group.next()
                        running -= 1
                    }
                    running += 1
                    group.addTask {
                        let report = RowReport()
                        do {
                            try await check(row, report)
                        } catch is RowReport.Stopped {
                            // (recorded where it stopped)
                        } catch {
                            report.record("the row stopped: \(error)")
                        }
                        await self.finish(row, report)
                    }
                }
            }
        }
    }

    private func finish(_ row: MatrixRow, _ report: RowReport) {
        let key = row.testDescription
        reports[key] = report
        for continuation in waiting.removeValue(forKey: key) ?? [] { continuation.resume(returning: report) }
    }
}

/// What went wrong in one matrix row, collected while it runs outside its test case
/// (``MatrixRun``) and recorded as the test case's issues by ``replay()``.
///
/// Thread safety: `problems` is guarded by its lock.
final class RowReport: Sendable {
    /// A row could not go on (a ``require(_:_:sourceLocation:)`` failed); the problem is recorded.
    struct Stopped: Error {}

    private struct Problem: Sendable {
        let comment: String
        let sourceLocation: SourceLocation
    }

    private let problems = Locked<[Problem]>([])

    /// Records a problem unless `condition` holds (as `#expect`).
    func expect(_ condition: Bool, _ comment: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation) {
        if !condition { record(comment(), sourceLocation: sourceLocation) }
    }

    /// Records a problem (as `Issue.record`).
    func record(_ comment: String, sourceLocation: SourceLocation = #_sourceLocation) {
        problems.withLock { $0.append(Problem(comment: comment, sourceLocation: sourceLocation)) }
    }

    /// `value`, or a problem recorded and ``Stopped`` thrown when it is nil (as `#require`).
    func require<T>(_ value: T?, _ comment: @autoclosure () -> String = "", sourceLocation: SourceLocation = #_sourceLocation) throws -> T {
        guard let value else {
            record("required value missing. \(comment())", sourceLocation: sourceLocation)
            throw Stopped()
        }
        return value
    }

    /// A problem recorded and ``Stopped`` thrown unless `condition` holds (as `#require`).
    func require(_ condition: Bool, _ comment: @autoclosure () -> String = "", sourceLocation: SourceLocation = #_sourceLocation) throws {
        guard condition else {
            record("requirement failed. \(comment())", sourceLocation: sourceLocation)
            throw Stopped()
        }
    }

    /// Records every problem as an issue of the running test (the row's test case).
    func replay() {
        for problem in problems.withLock({ $0 }) {
            Issue.record(Comment(rawValue: problem.comment), sourceLocation: problem.sourceLocation)
        }
    }
}
