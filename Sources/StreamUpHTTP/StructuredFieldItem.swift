/// The two RFC 9651 structured-field items the resumable-upload fields use: Boolean (`?1`, `?0`)
/// and Integer (`-`? 1–15 digits), parsed from one field value. Parameters after the item
/// (`;key=value`, RFC 9651 §3.1.2) are checked for form and ignored; spaces before and after
/// the item are discarded (§4.2). A value that holds anything else (another item type, a list,
/// a trailing comma) is not the item asked for: the functions answer `nil`. A field sent on
/// more than one line is a list, not an item: look it up with ``Swift/Array/single(named:)``.
///
/// Thread safety: stateless; callable from any thread.
package enum StructuredFieldItem {
    /// The Boolean item `value` holds, or `nil` when it holds anything else.
    package static func boolean(_ value: String) -> Bool? {
        guard case .boolean(let result) = item(value) else { return nil }
        return result
    }

    /// The Integer item `value` holds, or `nil` when it holds anything else.
    package static func integer(_ value: String) -> Int? {
        guard case .integer(let result) = item(value) else { return nil }
        return result
    }

    // MARK: Grammar (RFC 9651 §4.2)

    private enum BareItem {
        case boolean(Bool)
        case integer(Int)
        /// A decimal, string, token, byte sequence or date: valid, but never what the upload
        /// fields want.
        case other
    }

    /// `sf-item` (§4.2.3) with the surrounding spaces §4.2 discards; `nil` when `value` is not
    /// exactly one item with well-formed parameters.
    private static func item(_ value: String) -> BareItem? {
        let bytes = Array(value.utf8)[...].drop { $0 == ASCII.space }
        guard let (item, rest) = bareItem(bytes) else { return nil }
        guard let end = parameters(rest), end.allSatisfy({ $0 == ASCII.space }) else { return nil }
        return item
    }

    /// One bare item at the start of `bytes`, and what follows it.
    private static func bareItem(_ bytes: ArraySlice<UInt8>) -> (BareItem, ArraySlice<UInt8>)? {
        guard let first = bytes.first else { return nil }
        switch first {
        case UInt8(ascii: "?"):
            let rest = bytes.dropFirst()
            guard let digit = rest.first, digit == UInt8(ascii: "0") || digit == UInt8(ascii: "1") else { return nil }
            return (.boolean(digit == UInt8(ascii: "1")), rest.dropFirst())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return number(bytes)
        case UInt8(ascii: "\""):
            return string(bytes)
        case UInt8(ascii: "*"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
            let rest = bytes.dropFirst().drop { ASCII.isTokenByte($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "/") }
            return (.other, rest)
        case UInt8(ascii: ":"):
            // `sf-binary` (§3.3.5): base64 between colons.
            let body = bytes.dropFirst()
            let content = body.prefix { isBase64Byte($0) }
            guard body.dropFirst(content.count).first == UInt8(ascii: ":") else { return nil }
            return (.other, body.dropFirst(content.count + 1))
        case UInt8(ascii: "@"):
            // `sf-date` (§3.3.7): `@` and an Integer.
            guard let (date, rest) = number(bytes.dropFirst()), case .integer = date else { return nil }
            return (.other, rest)
        default:
            return nil
        }
    }

    /// `sf-integer` (at most 15 digits) or `sf-decimal` (at most 12 + 3 digits).
    private static func number(_ bytes: ArraySlice<UInt8>) -> (BareItem, ArraySlice<UInt8>)? {
        let negative = bytes.first == UInt8(ascii: "-")
        let unsigned = negative ? bytes.dropFirst() : bytes
        let digits = unsigned.prefix { ASCII.decimalDigit($0) != nil }
        guard !digits.isEmpty else { return nil }
        var rest = unsigned.dropFirst(digits.count)
        if rest.first == UInt8(ascii: ".") {
            let fraction = rest.dropFirst().prefix { ASCII.decimalDigit($0) != nil }
            guard digits.count <= 12, (1...3).contains(fraction.count) else { return nil }
            rest = rest.dropFirst(1 + fraction.count)
            return (.other, rest)
        }
        guard digits.count <= 15 else { return nil }
        let magnitude = digits.reduce(0) { $0 * 10 + (ASCII.decimalDigit($1) ?? 0) }
        return (.integer(negative ? -magnitude : magnitude), rest)
    }

    /// `sf-string`: printable ASCII between quotes, `\"` and `\\` escaped.
    private static func string(_ bytes: ArraySlice<UInt8>) -> (BareItem, ArraySlice<UInt8>)? {
        var rest = bytes.dropFirst()
        while let byte = rest.first {
            rest = rest.dropFirst()
            switch byte {
            case UInt8(ascii: "\""):
                return (.other, rest)
            case UInt8(ascii: "\\"):
                guard let escaped = rest.first, escaped == UInt8(ascii: "\"") || escaped == UInt8(ascii: "\\") else { return nil }
                rest = rest.dropFirst()
            case 0x20...0x7E:
                continue
            default:
                return nil
            }
        }
        return nil
    }

    /// Skips a run of `;key[=bare-item]` parameters (§4.2.3.2) at the start of `bytes` and
    /// returns what follows; `nil` when a parameter is malformed.
    private static func parameters(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        var rest = bytes
        while let first = rest.first, first == ASCII.semicolon {
            rest = rest.dropFirst().drop { $0 == ASCII.space }
            guard let start = rest.first,
                start == UInt8(ascii: "*") || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(start)
            else { return nil }
            rest = rest.drop { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || ASCII.decimalDigit(byte) != nil
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
                    || byte == UInt8(ascii: "*")
            }
            if rest.first == UInt8(ascii: "=") {
                guard let (_, after) = bareItem(rest.dropFirst()) else { return nil }
                rest = after
            }
        }
        return rest
    }

    private static func isBase64Byte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="):
            true
        default:
            false
        }
    }
}
