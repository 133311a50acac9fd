import Foundation

/// What a `--redact` rule puts in place of each match: the fixed mask (`***`), or a template
/// given apart from the pattern (`--redact-with`), in `NSRegularExpression`'s template syntax:
/// `$N` is group N's text (as many digits as the pattern has groups can take), `\` makes the next
/// character literal (`\$`, `\\`), everything else is itself.
///
/// Parsed once, when the rule is made, so a reference to a group the pattern does not have is
/// refused then instead of quietly becoming empty text in every record.
///
/// Thread safety: a value type.
struct RedactionTemplate: Sendable, Equatable {
    /// One part of the text put in place of a match.
    enum Part: Sendable, Equatable {
        case text(String)
        case group(Int)
    }

    let parts: [Part]

    /// The fixed mask alone.
    static let mask = RedactionTemplate(parts: [.text(RecordFilter.mask)])

    private init(parts: [Part]) {
        self.parts = parts
    }

    /// Parses `template` for a pattern with `groups` capture groups.
    /// - Throws: the text of a usage error when it names a group the pattern does not have.
    init(_ template: String, groups: Int) throws(TemplateError) {
        // As NSRegularExpression reads a template: a group number has at most as many digits
        // as the highest group number.
        let digitsAllowed = String(groups).count
        var parts: [Part] = []
        var text = ""
        var characters = template[...]
        while let character = characters.popFirst() {
            switch character {
            case "\\":
                if let next = characters.popFirst() { text.append(next) }
            case "$":
                let digits = characters.prefix { $0.isASCII && $0.isNumber }.prefix(digitsAllowed)
                guard !digits.isEmpty, let number = Int(digits) else {
                    text.append(character)
                    continue
                }
                guard number <= groups else { throw TemplateError(reference: "$\(digits)", groups: groups) }
                characters = characters.dropFirst(digits.count)
                if !text.isEmpty { parts.append(.text(text)) }
                text = ""
                parts.append(.group(number))
            default:
                text.append(character)
            }
        }
        if !text.isEmpty { parts.append(.text(text)) }
        self.parts = parts
    }

    /// The text for `match` in `string` (the string the match was found in).
    func expand(_ match: NSTextCheckingResult, in string: NSString) -> String {
        var expanded = ""
        for part in parts {
            switch part {
            case .text(let text):
                expanded += text
            case .group(let number):
                let range = match.range(at: number)
                if range.location != NSNotFound && range.length > 0 { expanded += string.substring(with: range) }
            }
        }
        return expanded
    }

    /// A template names a group its pattern does not have.
    ///
    /// Thread safety: a value type.
    struct TemplateError: Error {
        let reference: String
        let groups: Int

        var description: String {
            switch groups {
            case 0: "'\(reference)' names a group, and the pattern has none: put ( ) around the part to keep"
            case 1: "'\(reference)' names a group the pattern does not have (it has one: $1)"
            default: "'\(reference)' names a group the pattern does not have (it has \(groups): $1 to $\(groups))"
            }
        }
    }
}
