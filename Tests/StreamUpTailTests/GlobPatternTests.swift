import StreamUp
import Testing

@testable import StreamUpTail

/// The glob matcher as a pure function: shell rules for `*`, `?`, `[…]`, `**`, leading dots
/// and escapes, on whole paths and single names.
@Suite struct GlobPatternTests {
    private func matches(_ pattern: String, _ path: String) throws -> Bool {
        try GlobPattern(pattern).matches(path)
    }

    /// `*` matches any run within one component, including none, but never a `/`.
    @Test func starStaysWithinOneComponent() throws {
        #expect(try matches("/var/log/*.log", "/var/log/app.log"))
        #expect(try matches("/var/log/*.log", "/var/log/.log") == false)  // a hidden name
        #expect(try matches("/var/log/*", "/var/log/a"))
        #expect(try matches("/var/log/a*b*c", "/var/log/abc"))
        #expect(try matches("/var/log/a*b*c", "/var/log/axxbyyc"))
        #expect(try matches("/var/log/a*b*c", "/var/log/axxbyy") == false)
        #expect(try matches("/var/log/*.log", "/var/log/sub/app.log") == false)
        #expect(try matches("/var/*/app.log", "/var/log/app.log"))
        #expect(try matches("/var/*/app.log", "/var/log/x/app.log") == false)
    }

    /// `?` matches exactly one character (a Unicode scalar, not a byte).
    @Test func questionMarkMatchesOneCharacter() throws {
        #expect(try matches("app?.log", "app1.log"))
        #expect(try matches("app?.log", "app.log") == false)
        #expect(try matches("app?.log", "app12.log") == false)
        #expect(try matches("app?.log", "appé.log"))
    }

    /// Sets: members, ranges, negation with `!` or `^`, a `]` first is a member, and a `[`
    /// without its `]` is an ordinary character.
    @Test func bracketSets() throws {
        #expect(try matches("app[12].log", "app1.log"))
        #expect(try matches("app[12].log", "app3.log") == false)
        #expect(try matches("app[0-9][0-9].log", "app42.log"))
        #expect(try matches("app[!0-9].log", "appx.log"))
        #expect(try matches("app[!0-9].log", "app4.log") == false)
        #expect(try matches("app[^a].log", "appb.log"))
        #expect(try matches("app[]x].log", "app].log"))
        #expect(try matches("app[.log", "app[.log"))
        #expect(try matches("app[.log", "appx.log") == false)
    }

    /// `**` stands for zero or more directories, but never a hidden one.
    @Test func doubleStarSpansDirectories() throws {
        #expect(try matches("/logs/**/*.log", "/logs/a.log"))
        #expect(try matches("/logs/**/*.log", "/logs/x/a.log"))
        #expect(try matches("/logs/**/*.log", "/logs/x/y/z/a.log"))
        #expect(try matches("/logs/**/*.log", "/logs/.hidden/a.log") == false)
        #expect(try matches("/logs/**/*.log", "/other/a.log") == false)
        #expect(try matches("/logs/**", "/logs/x/y"))
    }

    /// A hidden name is matched only by a pattern that spells its dot.
    @Test func leadingDotNeedsALiteralDot() throws {
        #expect(try matches("*", ".profile") == false)
        #expect(try matches("?profile", ".profile") == false)
        #expect(try matches("[.]profile", ".profile") == false)
        #expect(try matches(".*", ".profile"))
        #expect(try matches(".profile", ".profile"))
    }

    /// A backslash makes a wildcard literal; a pattern without wildcards is a plain path.
    @Test func escapesAndLiterals() throws {
        #expect(try matches(#"app\*.log"#, "app*.log"))
        #expect(try matches(#"app\*.log"#, "appx.log") == false)
        #expect(try GlobPattern(#"/var/log/app\*.log"#).hasWildcards == false)
        #expect(try GlobPattern("/var/log/app.log").hasWildcards == false)
        #expect(try GlobPattern("/var/log/*.log").hasWildcards)
    }

    /// Absolute patterns match absolute paths only, relative ones relative paths; empty
    /// components are ignored; an empty pattern is refused.
    @Test func absoluteRelativeAndEmpty() throws {
        #expect(try matches("logs/*.log", "logs/a.log"))
        #expect(try matches("logs/*.log", "/logs/a.log") == false)
        #expect(try matches("/logs/*.log", "logs/a.log") == false)
        #expect(try matches("/logs//*.log", "/logs/a.log"))
        #expect(throws: StreamUpError.self) { try GlobPattern("") }
    }

    /// A name that leads `*` to backtrack many times still matches in reasonable steps (the
    /// matcher remembers only the last star).
    @Test func manyStarsDoNotBlowUp() {
        let name = String(repeating: "a", count: 200) + "b"
        #expect(GlobPattern.matches(GlobPattern.parse("*a*a*a*a*a*a*a*a*c"[...]).tokens, name: name) == false)
        #expect(GlobPattern.matches(GlobPattern.parse("*a*a*a*a*a*a*a*a*b"[...]).tokens, name: name))
    }
}

extension GlobPattern.Component {
    /// The tokens of a wildcard component (none for the others).
    var tokens: [GlobPattern.Token] {
        guard case .wildcard(let tokens) = self else { return [] }
        return tokens
    }
}

/// Which paths a selection takes: directories stand for their files, excludes by name or path.
@Suite struct PathSelectionTests {
    /// An include that names a directory means every file in it; one ending in `/` too, even
    /// if it does not exist yet.
    @Test func directoriesStandForTheirFiles() throws {
        let selection = try PathSelection(includes: ["/var/log/app", "/srv/new/", "/etc/one.conf"], excludes: []) { $0 == "/var/log/app" }
        #expect(selection.includes.map(\.text) == ["/var/log/app/*", "/srv/new/*", "/etc/one.conf"])
        #expect(selection.selects("/var/log/app/a.log"))
        #expect(selection.selects("/var/log/app/sub/a.log") == false)
        #expect(selection.selects("/srv/new/x"))
        #expect(selection.selects("/etc/one.conf"))
    }

    /// An exclude without `/` matches names anywhere; with `/`, whole paths.
    @Test func excludesByNameOrByPath() throws {
        let selection = try PathSelection(includes: ["/logs/**/*"], excludes: ["*.gz", "/logs/private/*"]) { _ in false }
        #expect(selection.selects("/logs/a.log"))
        #expect(selection.selects("/logs/old/a.log.gz") == false)
        #expect(selection.selects("/logs/private/a.log") == false)
        #expect(selection.selects("/logs/public/a.log"))
    }

    /// Following nothing is a configuration error.
    @Test func noIncludeIsRefused() {
        #expect(throws: StreamUpError.self) { try PathSelection(includes: [], excludes: []) { _ in false } }
    }
}
