import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUpHTTP

/// JSON string literals (RFC 8259 §7) for records, telemetry lines and the sink's answers.
@Suite struct JSONStringTests {
    private static func quoted(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        bytes.withUnsafeBytes { JSONString.append($0, to: &output) }
        return String(decoding: output, as: UTF8.self)
    }

    /// Quotes, backslashes and every control character are escaped; the result decodes back.
    @Test func escapesWhatRFC8259Requires() throws {
        let text = "a\"b\\c\n\r\t\u{0}\u{1}\u{1F}/é😀"
        let json = JSONString.quoted(text)
        #expect(json == #""a\"b\\c\n\r\t\u0000\u0001\u001f/é😀""#)
        let decoded = try JSONSerialization.jsonObject(with: Data(json.utf8), options: .fragmentsAllowed) as? String
        #expect(decoded == text)
    }

    /// Backspace and form feed: the sink's and the telemetry line's old escapers wrote
    /// `\u0008` and `\u000c`, the records formatter `\b` and `\f`. RFC 8259 §7 allows both
    /// and names the two-character forms; one form is written everywhere now.
    @Test func backspaceAndFormFeedUseTheShortEscapes() {
        #expect(JSONString.quoted("\u{8}\u{C}") == #""\b\f""#)
    }

    /// DEL and U+2028/U+2029 need no escape (RFC 8259 §7 escapes only U+0000–U+001F, `"` and
    /// `\`), so they pass through unchanged.
    @Test func delAndLineSeparatorsPassThrough() {
        #expect(JSONString.quoted("\u{7F}\u{2028}\u{2029}") == "\"\u{7F}\u{2028}\u{2029}\"")
    }

    /// Bytes that are not well-formed UTF-8 become U+FFFD, one per maximal subpart (Unicode
    /// §3.9): `E2 82` cut short is one, `FF FE` two, an encoded surrogate three.
    @Test func invalidUTF8BecomesReplacementCharacters() {
        #expect(Self.quoted([0x61, 0xFF, 0xC3]) == "\"a\u{FFFD}\u{FFFD}\"")
        #expect(Self.quoted([0xE2, 0x82, 0x41, 0xFF, 0xFE]) == "\"\u{FFFD}A\u{FFFD}\u{FFFD}\"")
        #expect(Self.quoted([0xED, 0xA0, 0x80]) == "\"\u{FFFD}\u{FFFD}\u{FFFD}\"")
        #expect(Self.quoted([0xF0, 0x9F, 0x98]) == "\"\u{FFFD}\"")
        #expect(Self.quoted([0xC3, 0xA9]) == "\"é\"")
    }

    /// With surrogateescape, each such byte becomes `\udcXX` (PEP 383), so the bytes can be
    /// restored.
    @Test func surrogateEscapeKeepsEveryByte() {
        var output: [UInt8] = []
        ([0x61, 0xFF, 0xC3, 0xED, 0xA0, 0x80] as [UInt8]).withUnsafeBytes { JSONString.append($0, invalidUTF8: .surrogateEscape, to: &output) }
        #expect(String(decoding: output, as: UTF8.self) == #""a\udcff\udcc3\udced\udca0\udc80""#)
    }

    /// `prefixLength` is how much of the bytes the escaper writes within a budget: never more
    /// than the budget, and one more character, escape or replaced sequence would not fit.
    @Test(arguments: [JSONString.InvalidUTF8.replace, .surrogateEscape])
    func prefixLengthMatchesTheEscaper(invalidUTF8: JSONString.InvalidUTF8) {
        var random = SeededRandom(seed: 3)
        for _ in 0..<2000 {
            let bytes = (0..<Int.random(in: 0...60, using: &random)).map { _ in UInt8.random(in: 0...0xFF, using: &random) }
            let budget = Int.random(in: 6...200, using: &random)
            func size(_ count: Int) -> Int {
                var output: [UInt8] = []
                bytes[..<count].withUnsafeBytes { JSONString.appendContent($0, invalidUTF8: invalidUTF8, to: &output) }
                return output.count
            }
            let length = bytes.withUnsafeBytes { JSONString.prefixLength($0, within: budget, invalidUTF8: invalidUTF8) }
            #expect(size(length) <= budget)
            if length < bytes.count {
                // The next unit (1 to 4 bytes) does not fit.
                #expect((length + 1...min(length + 4, bytes.count)).allSatisfy { size($0) > budget || !Self.isBoundary(bytes, $0, invalidUTF8) })
            }
        }
    }

    /// Whether `count` bytes end on a whole unit (a character, an escape, a replaced sequence).
    private static func isBoundary(_ bytes: [UInt8], _ count: Int, _ invalidUTF8: JSONString.InvalidUTF8) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var index = 0
            while index < count {
                let length = buffer[index] < 0x80 ? 1 : UTF8Validation.sequenceLength(buffer, at: index)
                index += length > 0 ? length : invalidUTF8 == .replace ? UTF8Validation.maximalSubpartLength(buffer, at: index) : 1
            }
            return index == count
        }
    }

    /// `quoted` and `append` write the same bytes.
    @Test func quotedMatchesAppend() {
        let text = "tab\there \"q\" \u{1}"
        var output: [UInt8] = []
        JSONString.append(text, to: &output)
        #expect(Array(JSONString.quoted(text).utf8) == output)
    }
}
