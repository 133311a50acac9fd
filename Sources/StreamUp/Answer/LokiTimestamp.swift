/// Reads the timestamps Loki writes in its answers into Unix nanoseconds: Go's `time.Time`
/// `String()` form (`2026-11-22 08:15:30.123456789 +0000 UTC`, any zone offset) and RFC 3339
/// (`2026-11-22T08:15:30.123Z`, `+01:00`), with 0 to 9 fraction digits.
///
/// Thread safety: stateless.
enum LokiTimestamp {
    static func nanoseconds(_ text: String) -> Int64? {
        var scanner = Scanner(Array(text.utf8))
        guard let year = scanner.number(4), scanner.skip("-"), let month = scanner.number(2), scanner.skip("-"),
            let day = scanner.number(2), scanner.skip("T") || scanner.skip(" "),
            let hour = scanner.number(2), scanner.skip(":"), let minute = scanner.number(2), scanner.skip(":"),
            let second = scanner.number(2), (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var fraction: Int64 = 0
        if scanner.skip(".") {
            var digits = 0
            while let digit = scanner.digit() {
                guard digits < 9 else { return nil }
                fraction = fraction * 10 + Int64(digit)
                digits += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<9 { fraction *= 10 }
        }
        guard let offset = scanner.zoneOffset(), scanner.atEnd else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + second) - offset
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return nil }
        return scaled + fraction
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (the civil-from-days inverse, as in
    /// Howard Hinnant's date algorithms).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// Walks the bytes of a timestamp.
    ///
    /// Thread safety: a value type, local to one parse.
    private struct Scanner {
        let bytes: [UInt8]
        var index = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { index == bytes.count }

        mutating func skip(_ text: String) -> Bool {
            let wanted = Array(text.utf8)
            guard bytes.count - index >= wanted.count, Array(bytes[index..<index + wanted.count]) == wanted else { return false }
            index += wanted.count
            return true
        }

        mutating func digit() -> Int? {
            guard index < bytes.count, (0x30...0x39).contains(bytes[index]) else { return nil }
            defer { index += 1 }
            return Int(bytes[index] - 0x30)
        }

        mutating func number(_ count: Int) -> Int? {
            var value = 0
            for _ in 0..<count {
                guard let digit = digit() else { return nil }
                value = value * 10 + digit
            }
            return value
        }

        /// `Z`, `±HH:MM`, or ` ±HHMM NAME` (Go): seconds east of UTC.
        mutating func zoneOffset() -> Int64? {
            if skip("Z") { return 0 }
            let goStyle = skip(" ")
            let sign: Int64
            if skip("+") { sign = 1 } else if skip("-") { sign = -1 } else { return nil }
            guard let hours = number(2) else { return nil }
            if !goStyle { guard skip(":") else { return nil } }
            guard let minutes = number(2) else { return nil }
            if goStyle {
                // The zone's name (UTC, CEST); Go may also append a monotonic clock reading.
                guard skip(" ") else { return nil }
                while index < bytes.count, bytes[index] != UInt8(ascii: " ") { index += 1 }
                if index < bytes.count { index = bytes.count }
            }
            return sign * Int64(hours * 3600 + minutes * 60)
        }
    }
}
