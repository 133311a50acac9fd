/// How lines join into multiline records (`--multiline`): which line starts a record, when a
/// record ends without a next start, and how big one may grow. `MultilineJoiner` applies it.
///
/// - ``Kind/start(_:)``: a line the regular expression matches (anywhere in it; anchor with
///   `^`) starts a record; any other line continues the one before.
/// - ``Kind/indented``: a line that starts with a space or a tab continues the one before.
/// - ``Kind/java``, ``Kind/python``, ``Kind/go``: the traces of these runtimes
///   (`MultilineTraces`): frames, `Caused by:`, `Traceback (most recent call last):`,
///   `goroutine N [running]:` and what follows each continue the line before.
///
/// Thread safety: a value type; safe to pass anywhere (a start pattern is kept as text and
/// compiled by each joiner).
package struct MultilineRule: Sendable, Equatable {
    /// Which lines continue a record.
    ///
    /// Thread safety: a value type.
    package enum Kind: Sendable, Equatable {
        case start(String)
        case indented
        case java
        case python
        case go
    }

    package var kind: Kind
    /// How long a record waits for a continuation before it goes out (default 1 s).
    package var timeout: Duration
    /// The most lines of one record (default 500); the next line starts a new one.
    package var maxLines: Int

    package init(_ kind: Kind, timeout: Duration = .seconds(1), maxLines: Int = 500) {
        self.kind = kind
        self.timeout = timeout
        self.maxLines = maxLines
    }

    /// The rule `--multiline TEXT` names: `start=REGEX`, `indented`, `java`, `python` or `go`.
    /// - Throws: ``StreamUpError`` `.invalidConfiguration` for another name or a pattern that
    ///   does not compile.
    package init(parsing text: String) throws(StreamUpError) {
        switch text {
        case "indented": self.init(.indented)
        case "java": self.init(.java)
        case "python": self.init(.python)
        case "go": self.init(.go)
        default:
            guard text.hasPrefix("start=") else {
                throw StreamUpError(.invalidConfiguration, "--multiline takes start=REGEX, indented, java, python or go, not \(text)")
            }
            let pattern = String(text.dropFirst("start=".count))
            guard !pattern.isEmpty else { throw StreamUpError(.invalidConfiguration, "--multiline start= needs a regular expression") }
            do {
                _ = try Regex(pattern)
            } catch {
                throw StreamUpError(.invalidConfiguration, "--multiline start=\(pattern): not a regular expression: \(error)")
            }
            self.init(.start(pattern))
        }
    }

    /// Why the rule cannot work, in words; nil when it can.
    package var problem: String? {
        if timeout <= .zero { return "--multiline-timeout must be positive" }
        if maxLines < 1 { return "--multiline-max-lines must be at least 1" }
        return nil
    }
}
