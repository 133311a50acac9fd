/// Reads a ClickHouse HTTP answer for refusals that no retry fixes. ClickHouse answers an
/// exception with its code first: `Code: 16, e.displayText() = DB::Exception: No such column …`
/// (18.x) or `Code: 60. DB::Exception: Table default.x does not exist. (UNKNOWN_TABLE)` (later
/// releases); the status is 500 for many of them (measured with 18.16: unknown column, unknown
/// JSONEachRow field, parse errors; 404 for an unknown table). Codes from ClickHouse's
/// `src/Common/ErrorCodes.cpp`.
///
/// Thread safety: stateless.
enum ClickHouseAnswer {
    /// Exception codes that say the request or the table is wrong, not the server's state:
    /// unknown or missing tables, databases, columns and formats, syntax and parse errors,
    /// type mismatches. `33` (CANNOT_READ_ALL_DATA, a body cut short) is not among them: a
    /// broken connection causes it.
    static let permanentCodes: Set<Int> = [
        6,  // CANNOT_PARSE_TEXT
        8,  // THERE_IS_NO_COLUMN
        16,  // NO_SUCH_COLUMN_IN_TABLE
        26,  // CANNOT_PARSE_QUOTED_STRING
        27,  // CANNOT_PARSE_INPUT_ASSERTION_FAILED
        38,  // CANNOT_PARSE_DATE
        41,  // CANNOT_PARSE_DATETIME
        44,  // ILLEGAL_COLUMN
        47,  // UNKNOWN_IDENTIFIER
        53,  // TYPE_MISMATCH
        60,  // UNKNOWN_TABLE
        62,  // SYNTAX_ERROR
        69,  // ARGUMENT_OUT_OF_BOUND
        70,  // CANNOT_CONVERT_TYPE
        72,  // CANNOT_PARSE_NUMBER
        73,  // UNKNOWN_FORMAT
        81,  // UNKNOWN_DATABASE
        117,  // INCORRECT_DATA (an unknown JSONEachRow field)
        349,  // CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN
    ]

    static func isPermanent(_ answer: UploadResponse) -> Bool {
        code(in: answer.body.prefix(64)).map(permanentCodes.contains) ?? false
    }

    /// The code of `Code: NN,` or `Code: NN.` at the start of the body.
    static func code(in head: some Collection<UInt8>) -> Int? {
        let text = String(decoding: head, as: UTF8.self).drop { $0 == " " || $0 == "\n" }
        guard text.hasPrefix("Code: ") else { return nil }
        let digits = text.dropFirst(6).prefix { $0.isASCII && $0.isNumber }
        let after = text.dropFirst(6 + digits.count).first
        guard after == "," || after == "." else { return nil }
        return Int(digits)
    }
}
