/// The time of the record being written, in every ``TimeStyle``.
///
/// Nanosecond times are unique and increasing per clock (one per formatter, so per source): a
/// record read in the same millisecond as the one before it (or, after the system clock stepped
/// back, earlier) gets the previous time plus 1 ns. Loki drops an entry whose time and line
/// equal one it already holds; this keeps two equal lines apart.
///
/// Thread safety: a value type; never shared (it caches the calendar text of the last second).
struct RecordTime {
    private var timestamps = TimestampWriter()
    private var milliseconds: Int64 = 0
    private var nanoseconds: Int64?
    private var lastNanoseconds = Int64.min

    /// Starts a record read `milliseconds` after 1970-01-01T00:00:00Z.
    mutating func begin(milliseconds: Int64) {
        self.milliseconds = milliseconds
        nanoseconds = nil
    }

    /// Starts a record whose time is given to the nanosecond: fixed (``SourceTimes``), or a
    /// container runtime's that is `stepped` 1 ns past the previous record's when it is not
    /// later. Its millisecond styles are that time rounded toward the past.
    mutating func begin(nanoseconds: Int64, stepped: Bool = false) {
        var value = nanoseconds
        if stepped, lastNanoseconds != Int64.min, value <= lastNanoseconds, lastNanoseconds < Int64.max {
            value = lastNanoseconds + 1
        }
        let (seconds, remainder) = value.quotientAndRemainder(dividingBy: 1_000_000)
        milliseconds = remainder < 0 ? seconds - 1 : seconds
        self.nanoseconds = value
        lastNanoseconds = value
    }

    /// Appends the record's time in `style`, without quotes.
    mutating func append(_ style: TimeStyle, to output: inout [UInt8]) {
        switch style {
        case .rfc3339:
            timestamps.append(milliseconds: milliseconds, to: &output)
        case .unixNanoseconds:
            Self.appendDecimal(recordNanoseconds(), to: &output)
        case .epochSeconds:
            let (seconds, fraction) = Self.split(milliseconds)
            Self.appendDecimal(seconds, to: &output)
            output.append(UInt8(ascii: "."))
            output.append(0x30 + UInt8(fraction / 100))
            output.append(0x30 + UInt8(fraction / 10 % 10))
            output.append(0x30 + UInt8(fraction % 10))
        case .unixSeconds:
            Self.appendDecimal(Self.split(milliseconds).seconds, to: &output)
        }
    }

    /// The record's nanoseconds: its milliseconds scaled, or just after the previous record's.
    private mutating func recordNanoseconds() -> Int64 {
        if let nanoseconds { return nanoseconds }
        let (scaled, overflow) = milliseconds.multipliedReportingOverflow(by: 1_000_000)
        var value = overflow ? (milliseconds < 0 ? Int64.min : Int64.max) : scaled
        if lastNanoseconds != Int64.min, value <= lastNanoseconds, lastNanoseconds < Int64.max {
            value = lastNanoseconds + 1
        }
        lastNanoseconds = value
        nanoseconds = value
        return value
    }

    /// Whole seconds (rounded toward the past) and the milliseconds within the second.
    private static func split(_ milliseconds: Int64) -> (seconds: Int64, fraction: Int64) {
        let (seconds, remainder) = milliseconds.quotientAndRemainder(dividingBy: 1000)
        return remainder < 0 ? (seconds - 1, remainder + 1000) : (seconds, remainder)
    }

    private static func appendDecimal(_ value: Int64, to output: inout [UInt8]) {
        if value < 0 {
            output.append(contentsOf: String(value).utf8)
            return
        }
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[19 - count] = 0x30 + UInt8(rest % 10)
                rest /= 10
                count += 1
            } while rest > 0
            output.append(contentsOf: buffer[(20 - count)...])
        }
    }
}
