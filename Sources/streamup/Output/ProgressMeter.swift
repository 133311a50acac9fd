import Foundation
import StreamUp
import StreamUpHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Shows how an upload goes, once a second on stderr: on a terminal, one line redrawn in place
/// the way curl's meter is (read, sent and its rate, acknowledged, waiting, retries, time); with `-v`,
/// the uploader's own counts as lines; with `--progress` when stderr is not a terminal, the
/// meter's text as lines. Nothing otherwise: a log collector reading stderr gets no noise.
///
/// Diagnostics printed meanwhile first clear the meter's line (``Terminal``), so the two never
/// mix on one line.
///
/// Thread safety: the timer fires on its own serial queue, which alone touches `last`; `stop`
/// may be called from anywhere (dispatch sources are thread-safe, though the protocol does not
/// say `Sendable`).
final class ProgressMeter: @unchecked Sendable {
    /// What the meter shows.
    struct Counts: Equatable {
        var read: Int
        /// Handed to the connection (the rate is of these): a slow receiver takes bytes long
        /// before it acknowledges them.
        var sent: Int
        /// Acknowledged by the receiver (one request: the same as sent).
        var acknowledged: Int
        var waiting: Int
        var retries: Int
    }

    private let timer: DispatchSourceTimer
    private let inPlace: Bool

    /// Starts a meter if one is wanted: always with `-v`, on a terminal, or when asked
    /// (`requested`: true for `--progress`, false for `--no-progress`, nil to decide).
    static func start(for uploader: StreamUploader, verbose: Bool, requested: Bool?) -> ProgressMeter? {
        if verbose { return ProgressMeter(uploader, inPlace: false, verbose: true) }
        let terminal = isatty(2) == 1
        guard requested ?? terminal else { return nil }
        return ProgressMeter(uploader, inPlace: terminal, verbose: false)
    }

    private init(_ uploader: StreamUploader, inPlace: Bool, verbose: Bool) {
        self.inPlace = inPlace
        let started = ContinuousClock.now
        var last = (time: started, sent: 0)
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "streamup.progress"))
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.setEventHandler {
            let now = ContinuousClock.now
            let elapsed = now - started
            if verbose {
                Terminal.info(String(format: "* %.0fs: ", elapsed.seconds) + uploader.progressLine)
                return
            }
            let counts = uploader.meterCounts
            let rate = Double(counts.sent - last.sent) / max((now - last.time).seconds, 0.001)
            last = (now, counts.sent)
            let line = Self.line(counts, rate: rate, elapsed: elapsed)
            if inPlace { Terminal.meter(line) } else { Terminal.info(line) }
        }
        timer.resume()
    }

    /// Stops the meter and clears its line.
    func stop() {
        timer.cancel()
        if inPlace { Terminal.clearMeter() }
    }

    /// `12.3 MiB read, 11.9 MiB sent at 2.10 MiB/s, 11.5 MiB acknowledged, 412 KiB waiting, 0 retries, 0:07`.
    static func line(_ counts: Counts, rate: Double, elapsed: Duration) -> String {
        let seconds = Int(elapsed.seconds)
        let time =
            seconds >= 3600
            ? String(format: "%d:%02d:%02d", seconds / 3600, seconds / 60 % 60, seconds % 60)
            : String(format: "%d:%02d", seconds / 60, seconds % 60)
        return "\(size(counts.read)) read, \(size(counts.sent)) sent at \(size(Int(rate)))/s, \(size(counts.acknowledged)) acknowledged, "
            + "\(size(counts.waiting)) waiting, \(counts.retries) \(counts.retries == 1 ? "retry" : "retries"), \(time)"
    }

    /// A byte count in binary units, three significant digits: `512 B`, `12.3 KiB`, `1.50 GiB`.
    static func size(_ bytes: Int) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(max(0, bytes))
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if unit == 0 { return "\(Int(value)) B" }
        return String(format: value < 10 ? "%.2f %@" : value < 100 ? "%.1f %@" : "%.0f %@", value, units[unit])
    }
}
