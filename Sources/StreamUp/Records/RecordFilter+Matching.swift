import Foundation

// Matching one rule within the record's budget (``MatchBudget``), and the advice a refused
// `--redact` gets when it reads as the old `PATTERN=TEMPLATE` spelling.
extension RecordFilter {
    /// Whether `expression` matches anywhere in `text`; nil when matching gave up (the time ran
    /// out, or ICU abandoned the search).
    static func firstMatch(_ expression: NSRegularExpression, in text: String, budget: inout MatchBudget) -> Bool? {
        var found = false
        var finished = false
        var local = budget
        expression.enumerateMatches(in: text, options: [.reportProgress, .reportCompletion], range: NSRange(location: 0, length: text.utf16.count)) {
            result, flags, stop in
            if result != nil {
                found = true
                stop.pointee = true
            } else if flags.contains(.completed) {
                finished = !flags.contains(.internalError)
            } else if local.tick() {
                stop.pointee = true
            }
        }
        if !found && !finished && !local.gaveUp { local.abandon() }
        budget = local
        if found { return true }
        return local.gaveUp ? nil : false
    }

    /// What a redaction made of a text.
    ///
    /// Thread safety: a value type.
    enum Redaction {
        case unchanged
        case replaced(String)
        /// Matching gave up: the text is not known to be clean.
        case gaveUp
    }

    /// `text` with every non-empty match of `expression` replaced by `template`'s text. Empty
    /// matches are left alone: they hold nothing to hide, and replacing them would put the mask
    /// between characters.
    static func redact(_ expression: NSRegularExpression, with template: RedactionTemplate, in text: String, budget: inout MatchBudget) -> Redaction {
        var matches: [NSTextCheckingResult] = []
        var finished = false
        var local = budget
        expression.enumerateMatches(in: text, options: [.reportProgress, .reportCompletion], range: NSRange(location: 0, length: text.utf16.count)) {
            result, flags, stop in
            if let result {
                if result.range.length > 0 { matches.append(result) }
            } else if flags.contains(.completed) {
                finished = !flags.contains(.internalError)
            } else if local.tick() {
                stop.pointee = true
            }
        }
        if !finished && !local.gaveUp { local.abandon() }
        budget = local
        guard !local.gaveUp else { return .gaveUp }
        guard !matches.isEmpty else { return .unchanged }
        let string = text as NSString
        var redacted = ""
        var position = 0
        for match in matches {
            redacted += string.substring(with: NSRange(location: position, length: match.range.location - position))
            redacted += template.expand(match, in: string)
            position = match.range.location + match.range.length
        }
        redacted += string.substring(from: position)
        return .replaced(redacted)
    }

    /// For a `--redact` value that does not compile: the advice to give the template apart, when
    /// the value reads as `PATTERN=TEMPLATE` (the part before its last `=` compiles).
    static func templateAdvice(_ rule: Rule) -> String {
        guard case .redact(let value, nil) = rule, let split = oldSpelling(value) else { return "" }
        return "; a template goes apart from the pattern: --redact '\(split.pattern)' --redact-with '\(split.template)'"
    }

    /// For a `--redact` pattern that compiles but can never match because it holds a template's
    /// group reference (`$1` after the end anchor): why, and the spelling meant.
    static func neverMatchingAdvice(_ rule: Rule) -> String? {
        guard case .redact(let value, _) = rule, containsGroupReference(value) else { return nil }
        guard let split = oldSpelling(value) else {
            return "'$' followed by a digit can never match (a template's group?); a template goes apart: --redact 'PATTERN' --redact-with 'TEMPLATE'"
        }
        return "'$' followed by a digit can never match (a template's group?); a template goes apart from the pattern: "
            + "--redact '\(split.pattern)' --redact-with '\(split.template)'"
    }

    /// `PATTERN=TEMPLATE` split at the last `=`, when there is one and the pattern compiles.
    private static func oldSpelling(_ value: String) -> (pattern: String, template: String)? {
        guard let equals = value.lastIndex(of: "="), equals != value.startIndex else { return nil }
        let pattern = String(value[..<equals])
        guard (try? NSRegularExpression(pattern: pattern)) != nil else { return nil }
        return (pattern, String(value[value.index(after: equals)...]))
    }

    /// Whether `pattern` has an unescaped `$` outside a set, followed by a digit: an end anchor
    /// before a digit, which nothing matches.
    private static func containsGroupReference(_ pattern: String) -> Bool {
        var characters = pattern[...]
        var setDepth = 0
        while let character = characters.popFirst() {
            switch character {
            case "\\": _ = characters.popFirst()
            case "[": setDepth += 1
            case "]": setDepth = max(0, setDepth - 1)
            case "$": if setDepth == 0, characters.first?.isNumber == true { return true }
            default: break
            }
        }
        return false
    }
}
