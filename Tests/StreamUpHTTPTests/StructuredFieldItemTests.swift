import Testing

@testable import StreamUpHTTP

/// RFC 9651 Booleans and Integers read from one field value, as the client (answers) and the
/// sink (requests) both read `Upload-Complete`, `Upload-Offset` and the interop version.
@Suite struct StructuredFieldItemTests {
    /// Booleans per RFC 9651 §3.3.6, parameters ignored; anything else is no value.
    @Test func booleansParse() {
        let booleans: [(String, Bool?)] = [
            ("?1", true), ("?0", false), ("?1;a=1;b", true), ("?1; x=\"y\"", true),
            ("?2", nil), ("1", nil), ("true", nil), ("?1,?0", nil), ("?1;A=1", nil), ("", nil),
        ]
        for (text, expected) in booleans {
            #expect(StructuredFieldItem.boolean(text) == expected, "\(text)")
        }
    }

    /// Integers per RFC 9651 §3.3.1: an optional minus and 1 to 15 digits.
    @Test func integersParse() {
        let integers: [(String, Int?)] = [
            ("0", 0), ("42", 42), ("-7", -7), ("007", 7), ("999999999999999", 999_999_999_999_999),
            ("5;unit=bytes", 5),
            ("1234567890123456", nil), ("1.5", nil), ("0x10", nil), ("?1", nil), ("12 13", nil), ("-", nil),
        ]
        for (text, expected) in integers {
            #expect(StructuredFieldItem.integer(text) == expected, "\(text)")
        }
    }

    /// The client's old reader refused an item with parameters (`?1;a=1`, `5;x`); an Item is a
    /// bare item followed by parameters (RFC 9651 §3.3 and §4.2.3), so the value is read.
    @Test func parametersAfterTheItemAreIgnored() {
        #expect(StructuredFieldItem.boolean("?1;a=1") == true)
        #expect(StructuredFieldItem.integer("5;x") == 5)
        #expect(StructuredFieldItem.integer("5;x;y=?0") == 5)
    }

    /// The client's old reader took `+5` as 5 (Swift's `Int("+5")`); `sf-integer` has no plus
    /// sign (RFC 9651 §3.3.1), so it is no Integer.
    @Test func aPlusSignIsNoInteger() {
        #expect(StructuredFieldItem.integer("+5") == nil)
    }

    /// Spaces before and after the item are discarded (RFC 9651 §4.2, steps 2 and 6); the
    /// sink's old reader failed on a leading space. Other whitespace is not SP and fails.
    @Test func surroundingSpacesAreDiscarded() {
        #expect(StructuredFieldItem.integer("  12  ") == 12)
        #expect(StructuredFieldItem.boolean(" ?0") == false)
        #expect(StructuredFieldItem.integer("\t12") == nil)
    }

    /// Parameter values may be any bare item, byte sequences (§3.3.5) and dates (§3.3.7)
    /// included; the sink's old reader refused both.
    @Test func parameterValuesOfEveryTypeAreSkipped() {
        #expect(StructuredFieldItem.integer("5;digest=:AQID:") == 5)
        #expect(StructuredFieldItem.boolean("?1;at=@1700000000") == true)
        #expect(StructuredFieldItem.integer("5;x=:AQID") == nil)
        #expect(StructuredFieldItem.integer("5;at=@1.5") == nil)
    }

    /// A field sent on two lines is a list, not an item (RFC 9651 §4.2): looked up with
    /// `single(named:)` it has no value.
    @Test func aRepeatedFieldHasNoSingleValue() {
        let fields = [HTTPField(name: "Upload-Offset", value: "1"), HTTPField(name: "upload-offset", value: "1")]
        #expect(fields.single(named: ResumableUploadFields.offset) == nil)
        #expect(fields.values(named: ResumableUploadFields.offset) == ["1", "1"])
        #expect([HTTPField(name: "UPLOAD-OFFSET", value: "3")].single(named: ResumableUploadFields.offset) == "3")
    }
}
