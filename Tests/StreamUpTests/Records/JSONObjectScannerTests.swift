import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

@Suite struct JSONObjectScannerTests {
    /// Python's verdict for each line: is it exactly one JSON object? (Strict UTF-8, no NaN or
    /// Infinity, and no line feed, which a line cannot hold.)
    private func pythonSaysObject(_ lines: [[UInt8]]) throws -> [Bool] {
        let program = #"""
            import sys, json
            def constant(name):
                raise ValueError(name)
            verdicts = []
            for hexline in sys.stdin.read().split():
                raw = bytes.fromhex(hexline) if hexline != "-" else b""
                try:
                    text = raw.decode("utf-8")
                    ok = "\n" not in text and isinstance(json.loads(text, parse_constant=constant), dict)
                except Exception:
                    ok = False
                verdicts.append("1" if ok else "0")
            print("".join(verdicts))
            """#
        let input = lines.map { $0.isEmpty ? "-" : $0.map { String(format: "%02x", $0) }.joined() }.joined(separator: "\n")
        let result = try ExternalTool.python(program, input: Array(input.utf8))
        #expect(result.status == 0, "python3 failed: \(result.errorText)")
        return String(decoding: result.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).map { $0 == "1" }
    }

    private func scan(_ line: [UInt8]) -> Bool {
        var scanner = JSONObjectScanner()
        return line.withUnsafeBytes { scanner.scan($0) } != nil
    }

    /// Hand-picked edges of the grammar, with the verdict the RFC gives; Python agrees.
    @Test func grammarEdgesMatchTheRFCAndPython() throws {
        let cases: [(String, Bool)] = [
            (#"{}"#, true), (#" {"a":1} "#, true), ("\t{\"a\":1}\r", true), (#"{"a":-0.5e+10}"#, true),
            (#"{"a":0}"#, true), (#"{"a":1E5}"#, true), (#"{"a":"\u00e9\ud83d\ude00\/\b"}"#, true),
            (#"{"a":"\ud800"}"#, true), (#"{"a":[],"a":{}}"#, true), (#"{"a":[true,false,null,"x",{"b":[]}]}"#, true),
            (#"{"é":"ü"}"#, true),
            (#"[]"#, false), (#""x""#, false), (#"1"#, false), (#"null"#, false), (#""#, false), (#"{"#, false),
            (#"{"a"}"#, false), (#"{"a":}"#, false), (#"{"a":1,}"#, false), (#"{,"a":1}"#, false), (#"{"a":1}}"#, false),
            (#"{"a":1} x"#, false), (#"{"a":01}"#, false), (#"{"a":1.}"#, false), (#"{"a":.5}"#, false),
            (#"{"a":+1}"#, false), (#"{"a":-}"#, false), (#"{"a":1e}"#, false), (#"{"a":NaN}"#, false),
            (#"{"a":Infinity}"#, false), (#"{"a":tru}"#, false), (#"{"a":nulll}"#, false), (#"{a:1}"#, false),
            (#"{'a':1}"#, false), (#"{"a":"\x"}"#, false), (#"{"a":"\u12"}"#, false), (#"{"a":"\u12G4"}"#, false),
            (#"{"a":[1,]}"#, false), (#"{"a":[1 2]}"#, false), (#"{"a":1 /* c */}"#, false), ("{\"a\":\"\u{1}\"}", false),
            ("{\"a\":\n1}", false), (#"{"a":"unterminated}"#, false), ("\u{FEFF}{}", false),
        ]
        var lines = cases.map { Array($0.0.utf8) }
        var expected = cases.map(\.1)
        lines += [[0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D], [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xED, 0xA0, 0x80, 0x22, 0x7D]]
        expected += [false, false]  // ill-formed UTF-8 in a key, an encoded surrogate in a value
        let python = try pythonSaysObject(lines)
        for (index, line) in lines.enumerated() {
            let text = String(decoding: line, as: UTF8.self)
            #expect(scan(line) == expected[index], "scanner on \(text)")
            #expect(python[index] == expected[index], "python on \(text)")
        }
    }

    /// On thousands of random mutations of valid objects, the scanner and Python agree on
    /// which lines are JSON objects.
    @Test(arguments: [UInt64(1), 2, 3])
    func scannerAgreesWithPythonOnMutatedObjects(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let seeds = [
            #"{"a":1,"b":[true,false,null],"c":{"d":"e\n\"f"},"g":-12.5e-3}"#,
            #"{"msg":"héllo 😀","n":[0,1,[2,[3]]],"s":"\u00e9\ud83d\ude00"}"#,
            #"{ "x" : { } , "y" : [ ] , "z" : "" }"#,
        ].map { Array($0.utf8) }
        let alphabet = Array(#"{}[]:,"\ -+.eE0123456789tfnrulsaubx/"#.utf8) + [0x09, 0x0D, 0x0A, 0x00, 0x1F, 0x7F, 0x80, 0xC3, 0xA9, 0xED, 0xFF]
        var lines: [[UInt8]] = []
        for _ in 0..<3000 {
            var line = seeds.randomElement(using: &random)!
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let position = Int.random(in: 0...line.count, using: &random)
                let byte = alphabet.randomElement(using: &random)!
                switch Int.random(in: 0..<3, using: &random) {
                case 0: line.insert(byte, at: position)
                case 1: if position < line.count { line.remove(at: position) }
                default: if position < line.count { line[position] = byte }
                }
            }
            lines.append(line)
        }
        let python = try pythonSaysObject(lines)
        try #require(python.count == lines.count)
        var disagreements = 0
        for (line, verdict) in zip(lines, python) where scan(line) != verdict {
            disagreements += 1
            if disagreements <= 5 {
                Issue.record("scanner says \(!verdict), Python \(verdict): \(String(decoding: line, as: UTF8.self)) \(line)")
            }
        }
        #expect(disagreements == 0)
        // The mutations must reach both verdicts often, or the comparison says little.
        #expect(python.filter { $0 }.count > 300 && python.filter { !$0 }.count > 300)
    }

    /// Top-level keys are found in order, with their escapes decoded for comparison; keys of
    /// nested objects are not top-level keys.
    @Test func topLevelKeysAreFoundAndCompared() {
        let line = Array(#"{"a":{"inner":1},"ti\u006De":2,"\ud83d\ude00":3,"lone\udc80":4}"#.utf8)
        var scanner = JSONObjectScanner()
        let object = line.withUnsafeBytes { scanner.scan($0) }
        #expect(object?.memberCount == 4)
        #expect(scanner.keys.count == 4)
        let names = [Array("a".utf8), Array("time".utf8), Array("😀".utf8), Array("lone".utf8)]
        line.withUnsafeBytes { bytes in
            for (key, name) in zip(scanner.keys, names) {
                #expect(scanner.key(key, in: bytes, equals: name) == (name != Array("lone".utf8)))
            }
            #expect(!scanner.key(scanner.keys[0], in: bytes, equals: Array("inner".utf8)))
        }
    }
}
