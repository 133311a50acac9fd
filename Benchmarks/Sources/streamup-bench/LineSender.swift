#if canImport(Glibc)
import Glibc
#endif

/// Writes log-like lines into a pipe at a steady rate, each stamped with its send time.
///
/// A line is 100 bytes: a 20-digit ``MonotonicClock`` time taken just before its `write(2)`,
/// a space, filler, `\n`. Line *i* is due at start + i / rate; the sender sleeps until then
/// (`clock_nanosleep`, absolute) and, if it is late, writes at once, so the rate holds on
/// average and no line is dropped. One `write` per line, as a logging process would do.
///
/// Thread safety: used by the one thread that calls ``run(fd:rate:seconds:)``.
enum LineSender {
    static let lineLength = 100

    /// The warm-up line written before the client starts; the receiver does not time it.
    static let warmUpLine = "warm-up: not timed\n"

    /// Sends `rate` lines per second for `seconds`; returns how many lines were written: fewer
    /// when the pipe's reader went away or left the pipe full for `stallSeconds`.
    /// `fd` is switched to non-blocking mode.
    static func run(fd: CInt, rate: Int, seconds: Double, stallSeconds: Double) -> Int {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var line = [UInt8](repeating: UInt8(ascii: "x"), count: lineLength)
        line[20] = UInt8(ascii: " ")
        line[lineLength - 1] = UInt8(ascii: "\n")
        let total = Int(Double(rate) * seconds)
        let period = 1e9 / Double(rate)
        let start = MonotonicClock.now()
        for index in 0..<total {
            MonotonicClock.sleep(until: start + UInt64(Double(index) * period))
            var stamp = MonotonicClock.now()
            for position in stride(from: 19, through: 0, by: -1) {
                line[position] = UInt8(ascii: "0") + UInt8(stamp % 10)
                stamp /= 10
            }
            let ok = line.withUnsafeBytes { write($0, to: fd, stallSeconds: stallSeconds) }
            if !ok { return index }
        }
        return total
    }

    /// Writes all of `bytes` to a non-blocking `fd`, waiting for space at most `stallSeconds`
    /// at a time.
    private static func write(_ bytes: UnsafeRawBufferPointer, to fd: CInt, stallSeconds: Double) -> Bool {
        guard var next = bytes.baseAddress else { return true }
        var remaining = bytes.count
        while remaining > 0 {
            let written = Glibc.write(fd, next, remaining)
            if written >= 0 {
                next += written
                remaining -= written
                continue
            }
            switch errno {
            case EINTR:
                continue
            case EAGAIN:
                var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                guard poll(&descriptor, 1, CInt(stallSeconds * 1000)) > 0 else { return false }
            default:
                return false
            }
        }
        return true
    }
}
