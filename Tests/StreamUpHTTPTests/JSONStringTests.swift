import Foundation
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

    /// Bytes that are not well-formed UTF-8 become `\udcXX`, one per byte (surrogateescape),
    /// so the output stays valid UTF-8 and the bytes can be restored.
    @Test func invalidUTF8BytesBecomeSurrogateEscapes() {
        #expect(Self.quoted([0x61, 0xFF, 0xC3]) == #""a\udcff\udcc3""#)
        #expect(Self.quoted([0xED, 0xA0, 0x80]) == #""\udced\udca0\udc80""#)
        #expect(Self.quoted([0xC3, 0xA9]) == "\"é\"")
    }

    /// `quoted` and `append` write the same bytes.
    @Test func quotedMatchesAppend() {
        let text = "tab\there \"q\" \u{1}"
        var output: [UInt8] = []
        JSONString.append(text, to: &output)
        #expect(Array(JSONString.quoted(text).utf8) == output)
    }
}
