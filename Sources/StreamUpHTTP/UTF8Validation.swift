/// Well-formed UTF-8 (Unicode 15, table 3-7 "Well-Formed UTF-8 Byte Sequences"): shortest
/// forms only, no surrogates (U+D800–U+DFFF), nothing above U+10FFFF.
///
/// Thread safety: stateless; callable from any thread.
package enum UTF8Validation {
    /// The length of the well-formed sequence starting at `bytes[index]` (a byte ≥ 0x80), or 0
    /// when none starts there (a continuation byte, a lead byte that cannot start a sequence, or
    /// a sequence that is cut short, overlong, a surrogate or too large).
    ///
    /// Inlinable: the JSON scanner in another module calls it per non-ASCII byte.
    @inlinable @inline(__always)
    package static func sequenceLength(_ bytes: UnsafeRawBufferPointer, at index: Int) -> Int {
        let lead = bytes[index]
        let remaining = bytes.count - index
        @inline(__always) func continuation(_ offset: Int, _ range: ClosedRange<UInt8> = 0x80...0xBF) -> Bool {
            offset < remaining && range.contains(bytes[index + offset])
        }
        switch lead {
        case 0xC2...0xDF:
            return continuation(1) ? 2 : 0
        case 0xE0:
            return continuation(1, 0xA0...0xBF) && continuation(2) ? 3 : 0
        case 0xE1...0xEC, 0xEE...0xEF:
            return continuation(1) && continuation(2) ? 3 : 0
        case 0xED:
            return continuation(1, 0x80...0x9F) && continuation(2) ? 3 : 0
        case 0xF0:
            return continuation(1, 0x90...0xBF) && continuation(2) && continuation(3) ? 4 : 0
        case 0xF1...0xF3:
            return continuation(1) && continuation(2) && continuation(3) ? 4 : 0
        case 0xF4:
            return continuation(1, 0x80...0x8F) && continuation(2) && continuation(3) ? 4 : 0
        default:
            return 0
        }
    }

    /// The length of the ill-formed sequence starting at `bytes[index]` (where
    /// ``sequenceLength(_:at:)`` is 0) that one U+FFFD replaces: its "maximal subpart", the
    /// longest start of a well-formed sequence there, or the one byte (Unicode 15, §3.9
    /// "U+FFFD Substitution of Maximal Subparts", the practice of the WHATWG decoder and of
    /// Swift's `String(decoding:as:)`). `E2 82 41` is one U+FFFD and `A`; `FF FE` is two.
    package static func maximalSubpartLength(_ bytes: UnsafeRawBufferPointer, at index: Int) -> Int {
        let need: Int
        let second: ClosedRange<UInt8>
        switch bytes[index] {
        case 0xC2...0xDF: (need, second) = (2, 0x80...0xBF)
        case 0xE0: (need, second) = (3, 0xA0...0xBF)
        case 0xE1...0xEC, 0xEE...0xEF: (need, second) = (3, 0x80...0xBF)
        case 0xED: (need, second) = (3, 0x80...0x9F)
        case 0xF0: (need, second) = (4, 0x90...0xBF)
        case 0xF1...0xF3: (need, second) = (4, 0x80...0xBF)
        case 0xF4: (need, second) = (4, 0x80...0x8F)
        default: return 1
        }
        var length = 1
        while length < need, index + length < bytes.count, (length == 1 ? second : 0x80...0xBF).contains(bytes[index + length]) {
            length += 1
        }
        return min(length, need - 1)
    }
}
