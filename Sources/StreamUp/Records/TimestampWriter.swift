#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes RFC 3339 timestamps in UTC with milliseconds (`2026-11-22T08:15:30.123Z`) as bytes.
///
/// The calendar part (`2026-11-22T08:15:30`) is computed with `gmtime_r` once per second and
/// reused, so a line costs a few byte copies, not a date conversion.
///
/// Thread safety: a value type; never shared.
struct TimestampWriter {
    private var cachedSecond = Int64.min
    /// `YYYY-MM-DDTHH:MM:SS` of `cachedSecond`.
    private var cachedText: [UInt8] = []

    /// Appends the timestamp for `milliseconds` since 1970-01-01T00:00:00Z.
    mutating func append(milliseconds: Int64, to output: inout [UInt8]) {
        let (second, millisecond) = milliseconds.quotientAndRemainder(dividingBy: 1000)
        // Round toward the past for times before 1970 too.
        let wholeSecond = millisecond < 0 ? second - 1 : second
        let fraction = millisecond < 0 ? millisecond + 1000 : millisecond
        if wholeSecond != cachedSecond {
            cachedSecond = wholeSecond
            cachedText = Self.calendarText(second: wholeSecond)
        }
        output.append(contentsOf: cachedText)
        output.append(UInt8(ascii: "."))
        output.append(0x30 + UInt8(fraction / 100))
        output.append(0x30 + UInt8(fraction / 10 % 10))
        output.append(0x30 + UInt8(fraction % 10))
        output.append(UInt8(ascii: "Z"))
    }

    private static func calendarText(second: Int64) -> [UInt8] {
        var time = time_t(second)
        var parts = tm()
        gmtime_r(&time, &parts)
        var text: [UInt8] = []
        func digits(_ value: Int32, _ count: Int) {
            var divisor: Int32 = 1
            for _ in 1..<count { divisor *= 10 }
            var value = value
            if value < 0 || value >= divisor * 10 {
                text.append(contentsOf: String(value).utf8)  // a year outside 0...9999
                return
            }
            while divisor > 0 {
                text.append(0x30 + UInt8(value / divisor))
                value %= divisor
                divisor /= 10
            }
        }
        digits(parts.tm_year + 1900, 4)
        text.append(UInt8(ascii: "-"))
        digits(parts.tm_mon + 1, 2)
        text.append(UInt8(ascii: "-"))
        digits(parts.tm_mday, 2)
        text.append(UInt8(ascii: "T"))
        digits(parts.tm_hour, 2)
        text.append(UInt8(ascii: ":"))
        digits(parts.tm_min, 2)
        text.append(UInt8(ascii: ":"))
        digits(parts.tm_sec, 2)
        return text
    }
}
