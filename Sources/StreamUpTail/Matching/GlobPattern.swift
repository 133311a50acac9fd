import StreamUp

/// A shell-style pattern for file paths, as `streamup tail` and ``FileTailer`` take them.
///
/// - `*` matches any run of characters within one path component, `?` one character, `[…]`
///   one character of a set (`[abc]`, ranges `[0-9]`, negated `[!…]` or `[^…]`; a `]` right
///   after the opening bracket is a member); `\` makes the next character literal.
/// - `**` as a whole component matches zero or more directories (`/var/log/**/*.log`).
/// - As in the shell, `*`, `?`, `[…]` and `**` never match a name that starts with `.`: a
///   hidden file or directory is matched only by a pattern that spells the dot.
/// - A `[` without its `]` is an ordinary character. Empty components (`a//b`) are ignored.
///
/// Matching compares Unicode scalars; it is pure (no file system access): `TailDiscovery`
/// walks the directories, this type only says what matches.
///
/// Thread safety: a value type.
package struct GlobPattern: Sendable, Hashable, CustomStringConvertible {
    /// One path component of a pattern.
    ///
    /// Thread safety: a value type.
    enum Component: Hashable {
        /// A name with no wildcard (escapes removed).
        case literal(String)
        /// A name with wildcards.
        case wildcard([Token])
        /// `**`: zero or more directories.
        case anyDirectories
    }

    /// One element of a wildcard component.
    ///
    /// Thread safety: a value type.
    enum Token: Hashable {
        case character(Unicode.Scalar)
        /// `?`
        case anyCharacter
        /// `*`
        case anyString
        /// `[…]`: the ranges (a single character is a one-element range), negated or not.
        case set([ClosedRange<Unicode.Scalar>], negated: Bool)
    }

    /// The pattern as given.
    package let text: String
    /// Whether the pattern starts at `/`.
    let isAbsolute: Bool
    let components: [Component]

    /// Parses `text`.
    /// - Throws: ``StreamUpError`` `.invalidConfiguration` for an empty pattern.
    package init(_ text: String) throws(StreamUpError) {
        guard !text.isEmpty else { throw StreamUpError(.invalidConfiguration, "an empty file pattern matches nothing") }
        self.text = text
        isAbsolute = text.hasPrefix("/")
        components = text.split(separator: "/", omittingEmptySubsequences: true).map { Self.parse(Substring($0)) }
    }

    package var description: String { text }

    /// Whether the pattern has any wildcard (a plain path otherwise).
    var hasWildcards: Bool {
        components.contains { if case .literal = $0 { false } else { true } }
    }

    /// Whether `path` (spelled as the pattern is: absolute or relative to the same directory)
    /// matches the whole pattern.
    package func matches(_ path: String) -> Bool {
        guard path.hasPrefix("/") == isAbsolute else { return false }
        let names = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        return Self.match(components[...], names[...])
    }

    /// Whether the name `name` matches the component `component` (for `**`: whether `**` may
    /// stand for a directory of that name, i.e. it is not hidden).
    static func matches(_ component: Component, name: String) -> Bool {
        switch component {
        case .literal(let literal): return literal == name
        case .wildcard(let tokens): return matches(tokens, name: name)
        case .anyDirectories: return !name.hasPrefix(".")
        }
    }

    /// Whether `name` (one path component) matches `tokens`.
    static func matches(_ tokens: [Token], name: String) -> Bool {
        let scalars = Array(name.unicodeScalars)
        // A leading dot is matched only by a literal dot.
        if scalars.first == ".", tokens.first != .character(".") { return false }
        var token = 0
        var scalar = 0
        // Where to resume after the last `*`: the token after it, and the scalar it has eaten up to.
        var starToken = -1
        var starScalar = 0
        while scalar < scalars.count {
            if token < tokens.count {
                switch tokens[token] {
                case .anyString:
                    starToken = token
                    starScalar = scalar
                    token += 1
                    continue
                case .anyCharacter:
                    token += 1
                    scalar += 1
                    continue
                case .character(let expected) where expected == scalars[scalar]:
                    token += 1
                    scalar += 1
                    continue
                case .set(let ranges, let negated) where ranges.contains(where: { $0.contains(scalars[scalar]) }) != negated:
                    token += 1
                    scalar += 1
                    continue
                case .character, .set:
                    break
                }
            }
            // A mismatch: let the last `*` eat one more character, or fail.
            guard starToken >= 0 else { return false }
            starScalar += 1
            scalar = starScalar
            token = starToken + 1
        }
        while token < tokens.count, tokens[token] == .anyString { token += 1 }
        return token == tokens.count
    }

    private static func match(_ components: ArraySlice<Component>, _ names: ArraySlice<String>) -> Bool {
        guard let first = components.first else { return names.isEmpty }
        if first == .anyDirectories {
            // Zero directories, or one more (not hidden) and still inside `**`.
            if match(components.dropFirst(), names) { return true }
            guard let name = names.first, matches(first, name: name) else { return false }
            return match(components, names.dropFirst())
        }
        guard let name = names.first, matches(first, name: name) else { return false }
        return match(components.dropFirst(), names.dropFirst())
    }

    /// One component of the pattern text.
    static func parse(_ text: Substring) -> Component {
        if text == "**" { return .anyDirectories }
        var tokens: [Token] = []
        let scalars = Array(text.unicodeScalars)
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            switch scalar {
            case "\\" where index + 1 < scalars.count:
                tokens.append(.character(scalars[index + 1]))
                index += 2
            case "*":
                if tokens.last != .anyString { tokens.append(.anyString) }
                index += 1
            case "?":
                tokens.append(.anyCharacter)
                index += 1
            case "[":
                if let (set, next) = parseSet(scalars, from: index + 1) {
                    tokens.append(set)
                    index = next
                } else {
                    tokens.append(.character("["))
                    index += 1
                }
            default:
                tokens.append(.character(scalar))
                index += 1
            }
        }
        let literal = tokens.compactMap { if case .character(let scalar) = $0 { scalar } else { nil } }
        if literal.count == tokens.count {
            var name = String.UnicodeScalarView()
            name.append(contentsOf: literal)
            return .literal(String(name))
        }
        return .wildcard(tokens)
    }

    /// The set that starts just after a `[` at `start`, and the index after its `]`; nil when
    /// there is no closing `]`.
    private static func parseSet(_ scalars: [Unicode.Scalar], from start: Int) -> (Token, Int)? {
        var index = start
        var negated = false
        if index < scalars.count, scalars[index] == "!" || scalars[index] == "^" {
            negated = true
            index += 1
        }
        var ranges: [ClosedRange<Unicode.Scalar>] = []
        var first = true
        while index < scalars.count {
            var low = scalars[index]
            if low == "]" && !first { return (.set(ranges, negated: negated), index + 1) }
            first = false
            if low == "\\", index + 1 < scalars.count {
                index += 1
                low = scalars[index]
            }
            if index + 2 < scalars.count, scalars[index + 1] == "-", scalars[index + 2] != "]" {
                let high = scalars[index + 2]
                if low <= high { ranges.append(low...high) }
                index += 3
            } else {
                ranges.append(low...low)
                index += 1
            }
        }
        return nil
    }
}
