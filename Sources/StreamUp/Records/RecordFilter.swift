import Foundation
import StreamUpSystem

/// What happens to each record before it enters the buffer (`--drop`, `--keep`, `--redact`):
/// rules applied in the order given to the record's message (after multiline joining and
/// container parsing, before formatting). A `drop` rule leaves out a record it matches, a
/// `keep` rule one it does not match (so several `keep` rules keep only records that match them
/// all), and a `redact` rule replaces every match in the message with its template (`$1` names a
/// group, `\$` a dollar sign). Rules after a redaction see the redacted text.
///
/// Patterns are `NSRegularExpression` (ICU syntax), matched anywhere in the message (anchor with
/// `^` and `$`). A message that is not UTF-8 is matched with U+FFFD in place of the bad bytes;
/// it stays as it was unless a redaction changes it.
///
/// Thread safety: a value type; its compiled expressions are immutable and thread-safe to match
/// with, and ``dropped`` is a shared counter guarded by its own lock, so copies (one per file
/// being read) count into one total.
package struct RecordFilter: Sendable, Equatable {
    /// One rule, as given on the command line.
    ///
    /// Thread safety: a value type.
    package enum Rule: Sendable, Equatable {
        case drop(String)
        case keep(String)
        case redact(String, replacement: String)

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
        /// Sent as these bytes (a redaction changed it).
        case replaced([UInt8])
    }

    /// Counts the records the rules left out, over every copy of the filter.
    ///
    /// Thread safety: the count is a `Mutex`.
    package final class Counter: Sendable {
        private let count = Mutex(0)

        package init() {}

        package var value: Int { count.withLock { $0 } }

        func add() { count.withLock { $0 += 1 } }
    }

    /// A rule with its compiled expression.
    private struct Step: @unchecked Sendable {
        // `NSRegularExpression` is immutable once made; matching from several threads is safe.
        let rule: Rule
        let expression: NSRegularExpression
    }

    package let rules: [Rule]
    private let steps: [Step]
    /// The records left out so far.
    package let dropped = Counter()

    /// - Throws: ``StreamUpError`` `.invalidConfiguration` naming the option and the pattern
    ///   that is not a regular expression.
    package init(_ rules: [Rule]) throws(StreamUpError) {
        var steps: [Step] = []
        for rule in rules {
            do {
                steps.append(Step(rule: rule, expression: try NSRegularExpression(pattern: rule.pattern)))
            } catch {
                throw StreamUpError(.invalidConfiguration, "\(Self.option(of: rule)) '\(rule.pattern)' is not a regular expression (ICU syntax)")
            }
        }
        self.rules = rules
        self.steps = steps
    }

    /// Whether there is no rule (every record passes as it is).
    package var isEmpty: Bool { rules.isEmpty }

    package static func == (lhs: RecordFilter, rhs: RecordFilter) -> Bool { lhs.rules == rhs.rules }

    /// What the rules make of the message `message` (its bytes, without the newline).
    package func apply(_ message: UnsafeRawBufferPointer) -> Outcome {
        guard !steps.isEmpty else { return .unchanged }
        var text = String(decoding: message, as: UTF8.self)
        var changed = false
        for step in steps {
            let range = NSRange(location: 0, length: (text as NSString).length)
            switch step.rule {
            case .drop:
                if step.expression.firstMatch(in: text, range: range) != nil { return drop() }
            case .keep:
                if step.expression.firstMatch(in: text, range: range) == nil { return drop() }
            case .redact(_, let replacement):
                let redacted = step.expression.stringByReplacingMatches(in: text, range: range, withTemplate: replacement)
                if redacted != text {
                    text = redacted
                    changed = true
                }
            }
        }
        return changed ? .replaced(Array(text.utf8)) : .unchanged
    }

    private func drop() -> Outcome {
        dropped.add()
        return .dropped
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
