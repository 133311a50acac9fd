import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

@Suite struct RecordFormatterTests {
    /// Lines of every kind of byte: each byte value alone and between ASCII, all 256 in one line,
    /// ill-formed UTF-8 of each kind, well-formed multi-byte UTF-8, control characters, quotes
    /// and backslashes, and random bytes.
    static func trickyLines() -> [[UInt8]] {
        var lines: [[UInt8]] = (0...255).map { [UInt8($0)] }
        lines += (0...255).map { [UInt8(ascii: "a"), UInt8($0), UInt8(ascii: "z")] }
        lines.append((0...255).map { UInt8($0) })
        lines += [
            [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF], [0xF0, 0x80, 0x80, 0x80],
            [0xF0, 0x8F, 0xBF, 0xBF],  // overlong forms
            [0x80], [0xBF], [0x80, 0x80, 0x80], [0x61, 0x9F, 0x62],  // lone continuation bytes
            [0xC2], [0xE2, 0x82], [0xF0, 0x9F, 0x98], [0xE2, 0x82, 0x41], [0xF0, 0x9F, 0x41, 0x42],  // cut short
            [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF], [0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80],  // surrogates in UTF-8
            [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xF7, 0xBF, 0xBF, 0xBF], [0xFE], [0xFF, 0xFE],
            [0xF8, 0x88, 0x80, 0x80, 0x80],  // beyond U+10FFFF, and bytes UTF-8 never uses
            Array("héllo wörld – 日本語 😀 \u{2028}\u{2029} \u{FFFF} \u{10FFFF}".utf8),
            [0xC3, 0xA9, 0xC3], [0xEF, 0xBB, 0xBF, 0x61],  // valid then cut; a byte-order mark
            Array("tab\there\r\u{0}nul\u{8}\u{C}\u{1B}[31m esc \u{7F} del".utf8),
            Array(#"quote " backslash \ slash / \u0041 \n literal"#.utf8),
            [],
        ]
        var random = SeededRandom(seed: 42)
        for _ in 0..<2000 {
            let count = Int.random(in: 0...40, using: &random)
            lines.append(
                (0..<count).map { _ in
                    // Mostly high bytes, where UTF-8 goes wrong.
                    Bool.random(using: &random) ? UInt8.random(in: 0x80...0xFF, using: &random) : UInt8.random(in: 0...0xFF, using: &random)
                })
        }
        return lines
    }

    /// Every record is JSON Python parses, whatever the bytes. With `surrogateescape` its
    /// message turns back into exactly the bytes of the line; by default it is the line with
    /// each ill-formed sequence replaced by one U+FFFD per maximal subpart, exactly as Swift's
    /// own decoder replaces them, and valid Unicode (no lone surrogate: Loki refuses those).
    @Test(arguments: [RecordFormat.ndjson, .json], RecordFormatter.InvalidUTF8.allCases)
    func anyBytesGiveJSONOfTheLine(format: RecordFormat, invalidUTF8: RecordFormatter.InvalidUTF8) throws {
        var formatter = try RecordFormatter(format: format, host: "h", invalidUTF8: invalidUTF8)
        let lines = Self.trickyLines()
        let output = records(&formatter, lines)
        let parsed = try JSONCheck.parse(output)
        try #require(parsed.count == lines.count)
        for (line, record) in zip(lines, parsed) {
            #expect(record.parsed, "line \(line) gave a record Python refused: \(record.error ?? "")")
            let expected = invalidUTF8 == .surrogateEscape ? line : Array(String(decoding: line, as: UTF8.self).utf8)
            #expect(record.message == expected, "line \(line) came back as \(record.message ?? [])")
        }
        let text = String(decoding: output, as: UTF8.self)
        #expect(text.contains("\\udc") == (invalidUTF8 == .surrogateEscape))
    }

    /// ndjson puts time, host, path, the extra fields in order, and last the message; the time
    /// is the read time, in RFC 3339 UTC with milliseconds.
    @Test func ndjsonWritesFieldsInAStableOrder() throws {
        var formatter = try RecordFormatter(
            format: .ndjson, host: "web-1", path: "/var/log/app.log", fields: [("env", "prod"), ("team", "a\"b")])
        let record = try #require(try JSONCheck.parse(records(&formatter, [Array("hello".utf8)])).first)
        #expect(record.keys == ["time", "host", "path", "env", "team", "message"])
        #expect(record.strings == ["time": "2023-11-14T22:13:20.123Z", "host": "web-1", "path": "/var/log/app.log", "env": "prod", "team": "a\"b"])
        #expect(record.timeMilliseconds == recordsReadAt)
        #expect(record.message == Array("hello".utf8))
    }

    /// Keys are configurable; a nil key leaves its field out; no path is written without a path.
    @Test func keysAreConfigurable() throws {
        let keys = RecordFormatter.Keys(message: "log", time: "@timestamp", host: nil, path: "file")
        var withoutPath = try RecordFormatter(format: .ndjson, keys: keys)
        var withPath = try RecordFormatter(format: .ndjson, keys: keys, path: "/tmp/x")
        let parsed = try JSONCheck.parse(
            records(&withoutPath, [Array("a".utf8)]) + records(&withPath, [Array("b".utf8)]), messageKey: "log", timeKey: "@timestamp")
        #expect(parsed.map(\.keys) == [["@timestamp", "log"], ["@timestamp", "file", "log"]])
        #expect(parsed.map(\.message) == [Array("a".utf8), Array("b".utf8)])
        #expect(parsed.map(\.timeMilliseconds) == [recordsReadAt, recordsReadAt])
    }

    /// An extra field named like the host replaces the host in its place; of two extra fields
    /// with one name the last wins; so no key is ever written twice.
    @Test func extraFieldsOverrideWithoutDuplicates() throws {
        var formatter = try RecordFormatter(format: .ndjson, host: "auto", fields: [("host", "set-by-hand"), ("x", "1"), ("x", "2")])
        let record = try #require(try JSONCheck.parse(records(&formatter, [Array("m".utf8)])).first)
        #expect(record.parsed)
        #expect(record.keys == ["time", "host", "x", "message"])
        #expect(record.strings["host"] == "set-by-hand")
        #expect(record.strings["x"] == "2")
    }

    /// Keys that would collide are refused with a message naming them.
    @Test func collidingKeysAreRefused() {
        #expect {
            _ = try RecordFormatter(format: .ndjson, fields: [("message", "x")])
        } throws: { error in
            (error as? StreamUpError)?.code == .invalidConfiguration && "\(error)".contains("\"message\"")
        }
        #expect {
            _ = try RecordFormatter(format: .ndjson, keys: .init(message: "time"))
        } throws: { error in
            "\(error)" == #"the time and message fields both use the key "time""#
        }
    }

    /// json mode: an object line keeps its own bytes and keys (its own key wins) and gets the
    /// fields it lacks inserted first; anything else is wrapped like ndjson.
    @Test func jsonModeMergesFieldsIntoObjectLines() throws {
        var formatter = try RecordFormatter(format: .json, host: "web-1", fields: [("env", "prod")])
        let lines = [
            #"{"level":"info","n":1.50e+3}"#,
            #"  {"time":"mine","b":[1,{"c":null}]}  "#,
            #"{"ti\u006de":"escaped key","host":"their-host"}"#,
            #"{}"#,
            #"{ }"#,
            #"[1,2]"#,
            #"{"a":1,}"#,
            #"{"a":1} trailing"#,
            "plain text",
        ].map { Array($0.utf8) }
        let output = records(&formatter, lines)
        let parsed = try JSONCheck.parse(output)
        try #require(parsed.count == lines.count)
        for (record, line) in zip(parsed, output.split(separator: 0x0A)) {
            #expect(record.parsed, "\(String(decoding: line, as: UTF8.self)): \(record.error ?? "")")
        }

        #expect(parsed[0].keys == ["time", "host", "env", "level", "n"])
        #expect(parsed[1].keys == ["host", "env", "time", "b"])
        #expect(parsed[1].strings["time"] == "mine")
        #expect(parsed[2].keys == ["env", "time", "host"])
        #expect(parsed[2].strings["host"] == "their-host")
        #expect(parsed[3].keys == ["time", "host", "env"])
        #expect(parsed[4].keys == ["time", "host", "env"])
        for index in 5..<lines.count {
            #expect(parsed[index].keys == ["time", "host", "env", "message"])
            #expect(parsed[index].message == lines[index])
        }
        // The object's own bytes are kept as they were (number spelling, spacing).
        let first = String(decoding: output.split(separator: 0x0A)[0], as: UTF8.self)
        #expect(first.hasSuffix(#","level":"info","n":1.50e+3}"#))
        let second = String(decoding: output.split(separator: 0x0A)[1], as: UTF8.self)
        #expect(second.hasPrefix("  {") && second.hasSuffix(#""time":"mine","b":[1,{"c":null}]}  "#))
    }

    /// Objects nested beyond the scanner's depth limit are wrapped whole, not passed on.
    @Test func tooDeepObjectIsWrapped() throws {
        var formatter = try RecordFormatter(format: .json, host: "h")
        let depth = JSONObjectScanner.maximumDepth
        let atLimit = Array(("{\"a\":" + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1) + "}").utf8)
        let beyond = Array(("{\"a\":" + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}").utf8)
        let parsed = try JSONCheck.parse(records(&formatter, [atLimit, beyond]))
        #expect(parsed.map(\.keys) == [["time", "host", "a"], ["time", "host", "message"]])
        #expect(parsed[1].message == beyond)
    }

    /// raw passes the line and adds its newline.
    @Test func rawIsTheLineAndANewline() throws {
        var formatter = try RecordFormatter(format: .raw)
        #expect(records(&formatter, [[0xFF, 0x00, 0x22], []]) == [0xFF, 0x00, 0x22, 0x0A, 0x0A])
    }

    /// Date input gives the same milliseconds as the existing RFC3339 helper would print.
    @Test func dateInputMatchesTheExistingTimestampHelper() throws {
        var formatter = try RecordFormatter(format: .ndjson, keys: .init(host: nil))
        let date = Date(timeIntervalSince1970: 1_700_000_000.5)
        let record = String(decoding: formatter.record(Array("x".utf8), readAt: date), as: UTF8.self)
        #expect(record == #"{"time":""# + RFC3339.string(from: date) + #"","message":"x"}"# + "\n")
    }
}
