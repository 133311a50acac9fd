import Foundation
import StreamUpHTTP

#if canImport(Glibc)
import Glibc
#endif

/// Turns SIGINT and SIGTERM into a graceful stop: the first one calls `onFirst` with the
/// signal's name, a second one prints what `onSecond` says was lost (one line) and exits at
/// once with status 130. Also ignores SIGPIPE for the whole process (the one place that does),
/// so a closed stdout or socket is an error return, not death.
///
/// Thread safety: handlers run on a private serial queue; the sources are kept alive in a
/// global that is written once, before any signal can arrive.
enum SignalHandling {
    nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []
    private static let queue = DispatchQueue(label: "streamup.signals")

    /// What the first signal's line ends with.
    static let secondStops = "(a second SIGINT/SIGTERM stops at once)"

    static func ignoreSIGPIPE() {
        signal(SIGPIPE, SIG_IGN)
    }

    /// Exits with `status` after `delay` unless the process has ended by then; `report` says why.
    static func exitLater(after delay: Duration, status: Int32, report: @escaping @Sendable () -> Void) {
        queue.asyncAfter(deadline: .now() + delay.seconds) {
            report()
            exit(status)
        }
    }

    /// Installs the handlers; call once, from the main thread, before starting work.
    /// - Parameters:
    ///   - onFirst: the graceful stop, given the signal ("SIGINT", "SIGTERM") and its number.
    ///   - onSecond: what the abort loses or where it is kept, one line for stderr (nil: nothing
    ///     to say).
    static func install(onFirst: @escaping @Sendable (_ name: String, _ number: Int32) -> Void, onSecond: @escaping @Sendable () -> String? = { nil }) {
        let count = SignalCounter()
        for (number, name) in [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                if count.increment() == 1 {
                    onFirst(name, number)
                } else {
                    if let line = onSecond() { Terminal.error("\(name) again: stopped at once; \(line)") }
                    exit(ExitStatus.interrupted)
                }
            }
            source.resume()
            sources.append(source)
        }
    }
}

/// Counts signals; only touched on `SignalHandling.queue`.
///
/// Thread safety: confined to `SignalHandling.queue`.
private final class SignalCounter: @unchecked Sendable {
    private var count = 0
    func increment() -> Int {
        count += 1
        return count
    }
}
