/// The two RFC 9651 structured-field items the resumable-upload fields use: Boolean (`?1`, `?0`)
/// and Integer (`-`? 1–15 digits). Parameters after the item (`;key=value`) are checked for
/// form and ignored. A field sent on more than one line is a list, not an item, so it does not
/// parse.
///
/// Thread safety: stateless; callable from any thread.
enum StructuredFieldItem {
    /// The Boolean item in the one value of `name`, or `nil` when absent or not a Boolean.
    static func boolean(_ name: String, in fields: [SinkHeaderField]) -> Bool? {
        guard let text = singleValue(name, in: fields), let (item, rest) = bareItem(Array(text.utf8)[...]),
              case .boolean(let value) = item, parameters(rest)
        else { return nil }
        return value
    }

    /// The Integer item in the one value of `name`, or `nil` when absent or not an Integer.
    static func integer(_ name: String, in fields: [SinkHeaderField]) -> Int? {
        guard let text = singleValue(name, in: fields), let (item, rest) = bareItem(Array(text.utf8)[...]),
              case .integer(let value) = item, parameters(rest)
        else { return nil }
        return value
    }

    /// True when a field called `name` is present at all (parsable or not).
    static func isPresent(_ name: String, in fields: [SinkHeaderField]) -> Bool {
        fields.first(named: name) != nil
    }

    // MARK: Grammar (RFC 9651 §4.2)

    private enum BareItem {
        case boolean(Bool)
        case integer(Int)
        /// A decimal, token or string: valid, but never what the upload fields want.
        case other
    }

    private static func singleValue(_ name: String, in fields: [SinkHeaderField]) -> String? {
        let values = fields.values(named: name)
        return values.count == 1 ? values[0] : nil
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

    /// True when `bytes` is empty or a well-formed run of `;key[=bare-item]` parameters.
    private static func parameters(_ bytes: ArraySlice<UInt8>) -> Bool {
        var rest = bytes
        while let first = rest.first {
            guard first == ASCII.semicolon else { return false }
            rest = rest.dropFirst().drop { $0 == ASCII.space }
            guard let start = rest.first,
                  start == UInt8(ascii: "*") || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(start)
            else { return false }
            rest = rest.drop { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || ASCII.decimalDigit(byte) != nil
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
                    || byte == UInt8(ascii: "*")
            }
            if rest.first == UInt8(ascii: "=") {
                guard let (_, after) = bareItem(rest.dropFirst()) else { return false }
                rest = after
            }
        }
        return true
    }
}
