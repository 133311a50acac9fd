import Foundation

/// Decides, line by line, whether a line continues the record before it (``MultilineRule``):
/// a start pattern (Swift `Regex`), indentation, or the built-in trace rules of Java, Python
/// and Go, which look at bytes only (no regular expression) and keep a little state (inside a
/// Python traceback, inside a Go goroutine dump).
///
/// Thread safety: a value type, confined to its joiner's thread (a compiled `Regex` is not
/// shared).
struct MultilineMatcher {
    private enum Rule {
        case start(Regex<AnyRegexOutput>)
        case indented
        case java
        case python
        case go
    }

    private let rule: Rule
    /// Python: frames of a traceback are coming (after `Traceback (most recent call last):`).
    private var inTraceback = false
    /// Python: the exception line of a traceback was seen; a blank line and a chained
    /// traceback may follow. Go: inside a panic or goroutine dump.
    private var afterTrace = false

    init(_ kind: MultilineRule.Kind) {
        switch kind {
        case .start(let pattern):
            // Checked when the rule was made (`MultilineRule(parsing:)`); a rule built in code
            // with a bad pattern starts a record at every line.
            rule = (try? Regex(pattern)).map(Rule.start) ?? .start(try! Regex("(?:)"))
        case .indented: rule = .indented
        case .java: rule = .java
        case .python: rule = .python
        case .go: rule = .go
        }
    }

    /// Whether `line` (without its `\n`) continues the record before it. Called for every
    /// line in order (the answer for a first line is ignored).
    mutating func continues(_ line: UnsafeRawBufferPointer) -> Bool {
        switch rule {
        case .start(let regex):
            let text = String(decoding: line, as: UTF8.self)
            return (try? regex.firstMatch(in: text)) == nil
        case .indented:
            return Self.isIndented(line)
        case .java:
            return Self.isIndented(line) || Self.hasPrefix(line, "Caused by: ") || Self.isJavaExceptionHeader(line)
        case .python:
            return python(line)
        case .go:
            return go(line)
        }
    }

    // MARK: Python

    private mutating func python(_ line: UnsafeRawBufferPointer) -> Bool {
        if Self.equals(line, "Traceback (most recent call last):") {
            inTraceback = true
            afterTrace = false
            return true
        }
        if Self.isIndented(line) { return true }
        if inTraceback {
            // The first line that is not a frame names the exception: it ends the traceback.
            inTraceback = false
            afterTrace = true
            return true
        }
        if afterTrace {
            if line.isEmpty || Self.hasPrefix(line, "During handling of the above exception")
                || Self.hasPrefix(line, "The above exception was the direct cause")
            {
                return true
            }
        }
        afterTrace = false
        return false
    }

    // MARK: Go

    private mutating func go(_ line: UnsafeRawBufferPointer) -> Bool {
        if Self.hasPrefix(line, "panic: ") || Self.hasPrefix(line, "fatal error: ") {
            afterTrace = true
            return false
        }
        if Self.hasPrefix(line, "goroutine "), Self.hasSuffix(line, "]:") {
            afterTrace = true
            return true
        }
        if Self.isIndented(line) { return true }
        if afterTrace {
            if line.isEmpty || Self.hasPrefix(line, "created by ") || Self.hasPrefix(line, "[signal ")
                || Self.hasPrefix(line, "...additional frames elided...") || Self.hasPrefix(line, "exit status ")
                || (Self.hasSuffix(line, ")") && line.contains(UInt8(ascii: "(")))
            {
                return true
            }
        }
        afterTrace = false
        return false
    }

    // MARK: Bytes

    /// Starts with a space or a tab.
    static func isIndented(_ line: UnsafeRawBufferPointer) -> Bool {
        guard let first = line.first else { return false }
        return first == 0x20 || first == 0x09
    }

    /// `java.lang.IllegalStateException: …` or `com.example.AppError` alone: a dotted class
    /// name ending in Exception, Error or Throwable, then `:` or the end of the line (how
    /// logback and log4j put an exception on the line after the message).
    static func isJavaExceptionHeader(_ line: UnsafeRawBufferPointer) -> Bool {
        var end = 0
        var dots = 0
        while end < line.count, line[end] != UInt8(ascii: ":") {
            let byte = line[end]
            let isName =
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$")
            if byte == UInt8(ascii: ".") {
                dots += 1
            } else if !isName {
                return false
            }
            end += 1
        }
        guard dots > 0 else { return false }
        let name = UnsafeRawBufferPointer(rebasing: line[..<end])
        return hasSuffix(name, "Exception") || hasSuffix(name, "Error") || hasSuffix(name, "Throwable")
    }

    static func hasPrefix(_ line: UnsafeRawBufferPointer, _ prefix: StaticString) -> Bool {
        let count = prefix.utf8CodeUnitCount
        guard line.count >= count else { return false }
        return memcmp(line.baseAddress!, prefix.utf8Start, count) == 0
    }

    static func hasSuffix(_ line: UnsafeRawBufferPointer, _ suffix: StaticString) -> Bool {
        let count = suffix.utf8CodeUnitCount
        guard line.count >= count else { return false }
        return memcmp(line.baseAddress! + (line.count - count), suffix.utf8Start, count) == 0
    }

    static func equals(_ line: UnsafeRawBufferPointer, _ text: StaticString) -> Bool {
        line.count == text.utf8CodeUnitCount && hasPrefix(line, text)
    }
}
