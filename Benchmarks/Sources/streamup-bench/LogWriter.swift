#if canImport(Glibc)
import Glibc
#endif

/// How a ``LogWriter`` run went: whether it kept its rate.
///
/// Thread safety: an immutable value.
struct LogWriterResult: Sendable {
    /// Lines written (each ``LogWriter/lineLength`` bytes).
    let lines: Int
    /// Lines it was asked to write.
    let target: Int
    /// `write(2)` calls made: `lines` when every line was written on time, fewer when some
    /// were late and went out together.
    let writes: Int
    /// From the first line's due time to the end of the last `write`, in ns.
    let elapsedNanos: UInt64
    /// The most any line was written after its due time, in ns.
    let maxLagNanos: UInt64
    /// Why the writer stopped early, or nil.
    let failure: String?
    /// Per line written: ``MonotonicClock`` time just after the `write(2)` that carried it.
    var writtenAt: [UInt64] = []

    var bytes: Int { lines * LogWriter.lineLength }

    /// Lines per second over the run (`lines` over the time from the first due time to the end
    /// of the last write, plus one period): exactly the target rate when no line was late.
    func linesPerSecond(rate: Int) -> Double {
        Double(lines) / (Double(elapsedNanos) / 1e9 + 1 / Double(rate))
    }
}

/// The log-shipping workload: appends 100-byte lines to files at a steady total rate, like busy
/// applications' logs. Line *i* (from 0) is `seq=` + *i* in 10 digits + a space + filler + `\n`,
/// goes to file *i* mod the number of files, and is due at start + i / rate. The writer sleeps
/// until the next line is due (`clock_nanosleep`, absolute) and then writes every line that is
/// due, one `write(2)` per run of lines for the same file: one line per call while it keeps up,
/// a small batch for a single file when it woke late, so the rate holds.
///
/// Thread safety: stateless; ``run(paths:rate:seconds:)`` runs on the caller's thread.
enum LogWriter {
    static let lineLength = 100
    static let prefix = Array("seq=".utf8)
    /// Digits of the sequence number.
    static let digits = 10
    /// The most lines one `write` carries when the writer is late.
    static let maxBatch = 1_000

    /// Appends `rate` lines per second in all for `seconds` to `paths` (opened with `O_APPEND`).
    static func run(paths: [String], rate: Int, seconds: Double) -> LogWriterResult {
        let total = Int(Double(rate) * seconds)
        var descriptors: [CInt] = []
        defer { for fd in descriptors { close(fd) } }
        for path in paths {
            let fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
            guard fd >= 0 else {
                return LogWriterResult(
                    lines: 0, target: total, writes: 0, elapsedNanos: 0, maxLagNanos: 0,
                    failure: "cannot open \(path): \(String(cString: strerror(errno)))")
            }
            descriptors.append(fd)
        }
        var writtenAt: [UInt64] = []
        writtenAt.reserveCapacity(total)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: maxBatch * lineLength, alignment: 64)
        defer { buffer.deallocate() }
        for index in 0..<maxBatch { fillLine(buffer, at: index * lineLength) }

        let period = 1e9 / Double(rate)
        let due = { (line: Int) -> UInt64 in UInt64(Double(line) * period) }
        let start = MonotonicClock.now()
        var written = 0
        var writes = 0
        var maxLag: UInt64 = 0
        var failure: String?
        while written < total {
            MonotonicClock.sleep(until: start + due(written))
            let now = MonotonicClock.now()
            maxLag = max(maxLag, now - min(now, start + due(written)))
            let dueNow = min(total, Int(Double(now - start) / period) + 1)
            let count = min(max(dueNow - written, 1), maxBatch)
            for line in 0..<count { stamp(written + line, into: buffer, at: line * lineLength) }
            // Runs of consecutive lines for the same file: all of them for one file, one line each for many.
            let run = descriptors.count == 1 ? count : 1
            for first in stride(from: 0, to: count, by: run) {
                let file = (written + first) % descriptors.count
                let bytes = UnsafeRawBufferPointer(rebasing: buffer[(first * lineLength)..<((first + run) * lineLength)])
                guard Descriptors.writeAll(descriptors[file], bytes) else {
                    failure = "write to \(paths[file]) failed: \(String(cString: strerror(errno)))"
                    break
                }
                writes += 1
                let now = MonotonicClock.now()
                for _ in 0..<run { writtenAt.append(now) }
            }
            guard failure == nil else { break }
            written += count
        }
        var result = LogWriterResult(
            lines: written, target: total, writes: writes, elapsedNanos: MonotonicClock.now() - start,
            maxLagNanos: maxLag, failure: failure)
        result.writtenAt = writtenAt
        return result
    }

    /// One line's constant part: the prefix, a space after the number, filler, the newline.
    private static func fillLine(_ buffer: UnsafeMutableRawBufferPointer, at offset: Int) {
        let filler = Array(" INFO app.request method=GET path=/api/v1/items status=200 duration_ms=12 ok ".utf8)
        for (index, byte) in prefix.enumerated() { buffer[offset + index] = byte }
        let rest = prefix.count + digits
        for index in rest..<(lineLength - 1) { buffer[offset + index] = filler[(index - rest) % filler.count] }
        buffer[offset + lineLength - 1] = UInt8(ascii: "\n")
    }

    /// Writes `number` as the line's 10 digits.
    private static func stamp(_ number: Int, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) {
        var value = number
        for position in stride(from: offset + prefix.count + digits - 1, through: offset + prefix.count, by: -1) {
            buffer[position] = UInt8(ascii: "0") + UInt8(value % 10)
            value /= 10
        }
    }
}
