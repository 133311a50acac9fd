import Foundation
import StreamUpSystem

/// What happens to each record before it enters the buffer (`--drop`, `--keep`, `--redact`):
/// rules applied in the order given to the record's message (after multiline joining and
/// container parsing, before formatting). A `drop` rule leaves out a record it matches, a
/// `keep` rule one it does not match (so several `keep` rules keep only records that match them
/// all), and a `redact` rule replaces every match in the message with ``mask`` (`***`), or with
/// its template when one was given apart from the pattern (`--redact-with`; see
/// ``RedactionTemplate``). Rules after a redaction see the redacted text.
///
/// Patterns are `NSRegularExpression` (ICU syntax), matched anywhere in the message (anchor with
/// `^` and `$`); an empty one is refused. A message that is not UTF-8 is matched with U+FFFD in
/// place of the bad bytes; it stays as it was unless a redaction changes it.
///
/// Matching is bounded: a record's rules together may spend ``timeLimit`` of CPU time, and as
/// much again per MiB of the record (``MatchBudget``): a pattern that runs in linear time takes a
/// tenth of that, one that backtracks without bound is stopped there whatever the record. A
/// record whose rules did not finish within it, or on which ICU abandoned a
/// match (a pattern that backtracks past ICU's stack on a long line), is sent with its whole
/// message replaced by ``mask``: never unredacted, never silently lost. Each is counted in
/// ``masked`` and said in a line (``notices``).
///
/// Thread safety: a value type; its compiled expressions are immutable and thread-safe to match
/// with, and ``dropped``, ``masked`` and ``notices`` are shared and guarded by their own locks, so
/// copies (one per file being read) count into one total.
package struct RecordFilter: Sendable, Equatable {
    /// One rule, as given on the command line.
    ///
    /// Thread safety: a value type.
    package enum Rule: Sendable, Equatable {
        case drop(String)
        case keep(String)
        /// Replaces each match with `template` (`--redact-with`), or with ``RecordFilter/mask``.
        case redact(String, template: String?)

        /// The regular expression's text.
        package var pattern: String {
            switch self {
            case .drop(let pattern), .keep(let pattern), .redact(let pattern, _): pattern
            }
        }
    }

    /// What a record becomes.
    ///
    /// Thread safety: a value type.
    package enum Outcome: Equatable {
        /// Sent as it is.
        case unchanged
        /// Left out.
        case dropped
        /// Sent as these bytes (a redaction changed it, or its message was masked whole).
        case replaced([UInt8])
    }

    /// Counts records, over every copy of the filter.
    ///
    /// Thread safety: the count is a `Mutex`.
    package final class Counter: Sendable {
        private let count = Mutex(0)

        package init() {}

        package var value: Int { count.withLock { $0 } }

        func add() { count.withLock { $0 += 1 } }
    }

    /// What a redaction puts in place of a match when no template is given, and what a whole
    /// message becomes when its rules did not finish.
    package static let mask = "***"

    /// The CPU time a record's rules may take, and as much again per MiB of the record: a linear
    /// pattern takes 30–90 ms over a 1 MiB record (this machine, 2026-11-28), one that
    /// backtracks without bound took a minute over 100,000 bytes.
    package static let defaultTimeLimit = Duration.seconds(1)

    /// A rule with its compiled expression.
    private struct Step: @unchecked Sendable {
        // `NSRegularExpression` is immutable once made; matching from several threads is safe.
        let rule: Rule
        let expression: NSRegularExpression
        /// For a redaction: what replaces a match.
        let template: RedactionTemplate?
    }

    package let rules: [Rule]
    /// The CPU time one record's rules may take together, and as much again per MiB of it.
    package let timeLimit: Duration
    private let steps: [Step]
    private let meter: MatchBudget.Meter
    /// The records left out so far.
    package let dropped = Counter()
    /// The records whose rules did not finish, sent with their message as ``mask``.
    package let masked = Counter()
    /// Where the line about a masked record goes.
    package let notices = Notices()

    /// - Throws: ``StreamUpError`` `.invalidConfiguration` naming the option and the pattern
    ///   that is empty or not a regular expression, or the template that names a group the
    ///   pattern does not have.
    package init(_ rules: [Rule], timeLimit: Duration = RecordFilter.defaultTimeLimit) throws(StreamUpError) {
        try self.init(rules, timeLimit: timeLimit, meter: .thread)
    }

    /// A filter whose time is read from `meter` (tests).
    init(_ rules: [Rule], timeLimit: Duration, meter: MatchBudget.Meter) throws(StreamUpError) {
        self.rules = rules
        self.timeLimit = timeLimit
        self.meter = meter
        steps = try rules.map { rule throws(StreamUpError) in try Self.compile(rule) }
    }

    /// `rule` compiled, or the usage error that says why it cannot be.
    private static func compile(_ rule: Rule) throws(StreamUpError) -> Step {
        let option = option(of: rule)
        guard !rule.pattern.isEmpty else {
            throw StreamUpError(.invalidConfiguration, "\(option): the pattern is empty (it would match every record); give the text to match")
        }
        let expression: NSRegularExpression
        do {
            expression = try NSRegularExpression(pattern: rule.pattern)
        } catch {
            throw StreamUpError(.invalidConfiguration, "\(option) '\(rule.pattern)' is not a regular expression (ICU syntax)\(templateAdvice(rule))")
        }
        guard case .redact(_, let given) = rule else { return Step(rule: rule, expression: expression, template: nil) }
        if let advice = neverMatchingAdvice(rule) {
            throw StreamUpError(.invalidConfiguration, "\(option) '\(rule.pattern)': \(advice)")
        }
        guard let given else { return Step(rule: rule, expression: expression, template: .mask) }
        do {
            return Step(rule: rule, expression: expression, template: try RedactionTemplate(given, groups: expression.numberOfCaptureGroups))
        } catch {
            throw StreamUpError(.invalidConfiguration, "--redact-with '\(given)': \(error.description) in '\(rule.pattern)'")
        }
    }

    /// Whether there is no rule (every record passes as it is).
    package var isEmpty: Bool { rules.isEmpty }

    package static func == (lhs: RecordFilter, rhs: RecordFilter) -> Bool { lhs.rules == rhs.rules && lhs.timeLimit == rhs.timeLimit }

    /// What the rules make of the message `message` (its bytes, without the newline).
    package func apply(_ message: UnsafeRawBufferPointer) -> Outcome {
        guard !steps.isEmpty else { return .unchanged }
        var text = String(decoding: message, as: UTF8.self)
        var changed = false
        var budget = MatchBudget(limit: limit(forBytes: message.count), meter: meter)
        for step in steps {
            switch step.rule {
            case .drop:
                switch Self.firstMatch(step.expression, in: text, budget: &budget) {
                case true?: return drop()
                case false?: break
                case nil: return gaveUp(step, budget: budget, bytes: message.count)
                }
            case .keep:
                switch Self.firstMatch(step.expression, in: text, budget: &budget) {
                case true?: break
                case false?: return drop()
                case nil: return gaveUp(step, budget: budget, bytes: message.count)
                }
            case .redact:
                switch Self.redact(step.expression, with: step.template ?? .mask, in: text, budget: &budget) {
                case .unchanged: break
                case .replaced(let redacted):
                    text = redacted
                    changed = true
                case .gaveUp: return gaveUp(step, budget: budget, bytes: message.count)
                }
            }
        }
        return changed ? .replaced(Array(text.utf8)) : .unchanged
    }

    /// The CPU time the rules may take over a message of `bytes` bytes.
    func limit(forBytes bytes: Int) -> Duration {
        timeLimit + timeLimit * (Double(bytes) / 1_048_576)
    }

    private func drop() -> Outcome {
        dropped.add()
        return .dropped
    }

    /// The outcome of a record whose rules did not finish: its message masked whole, counted,
    /// and said.
    private func gaveUp(_ step: Step, budget: MatchBudget, bytes: Int) -> Outcome {
        masked.add()
        let pattern = "\(Self.option(of: step.rule)) '\(step.rule.pattern)'"
        let what =
            budget.ranOutOfTime
            ? "\(pattern) took over \(Self.describe(limit(forBytes: bytes))) of CPU on a record of \(bytes) bytes"
            : "ICU abandoned matching \(pattern) on a record of \(bytes) bytes (its backtracking stack is full)"
        notices.post(
            "\(what): its message was sent as \(Self.mask), nothing of it unfiltered; make the pattern cheaper (bounded repeats such as \\w{1,64}, no nested ones such as (a+)+)"
        )
        return .replaced(Array(Self.mask.utf8))
    }

    /// `250ms`, `1s`, `1.5s`.
    static func describe(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1_000 + duration.components.attoseconds / 1_000_000_000_000_000
        if milliseconds < 1_000 { return "\(milliseconds)ms" }
        if milliseconds % 1_000 == 0 { return "\(milliseconds / 1_000)s" }
        return String(format: "%.1fs", Double(milliseconds) / 1_000)
    }

    /// The command-line option that gives `rule`.
    static func option(of rule: Rule) -> String {
        switch rule {
        case .drop: "--drop"
        case .keep: "--keep"
        case .redact: "--redact"
        }
    }
}
