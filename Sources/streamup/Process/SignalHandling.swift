import Foundation
import StreamUpHTTP

#if canImport(Glibc)
import Glibc
#endif

/// Turns SIGINT, SIGTERM and SIGHUP into a graceful stop: the first one calls `onFirst` with
/// the signal's name, a second SIGINT/SIGTERM prints what `onSecond` says was lost (one line)
/// and exits at once with status 130. A SIGHUP after the first signal changes nothing: a closed
/// terminal or ssh session often sends two (the kernel's to the foreground job, then the
/// shell's to each of its jobs), and the stop they ask for is already under way.
///
/// Signals that mean nothing to streamup and would end it by default (SIGUSR1, SIGUSR2,
/// SIGALRM: a stray `kill -USR1` meant for another program, a wrapper's alarm) are ignored for
/// the whole process, so they can never lose what is held; stopping is what SIGTERM is for. So
/// is SIGPIPE (the one place that ignores it), so a closed stdout or socket is an error return,
/// not death. A command that streamup starts gets all of them back at their defaults
/// (``startedCommandDefaults``).
///
/// Thread safety: handlers run on a private serial queue; the sources are kept alive in a
/// global that is written once, before any signal can arrive.
enum SignalHandling {
    nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []
    private static let queue = DispatchQueue(label: "streamup.signals")

    /// What the first signal's line ends with.
    static let secondStops = "(a second SIGINT/SIGTERM stops at once)"

    /// The signals a started command must get back at their defaults (`env --default-signal=`):
    /// those ignored here, and those the handlers take.
    static let startedCommandDefaults = "PIPE,INT,TERM,HUP,USR1,USR2,ALRM"

    /// Ignores SIGPIPE, SIGUSR1, SIGUSR2 and SIGALRM for the whole process; call first thing.
    static func ignoreStraySignals() {
        for number in [SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM] { signal(number, SIG_IGN) }
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
    ///   - onFirst: the graceful stop, given the signal ("SIGINT", "SIGTERM", "SIGHUP") and its
    ///     number.
    ///   - onSecond: what the abort loses or where it is kept, one line for stderr (nil: nothing
    ///     to say); called on a second SIGINT/SIGTERM, right before the exit.
    static func install(onFirst: @escaping @Sendable (_ name: String, _ number: Int32) -> Void, onSecond: @escaping @Sendable () -> String? = { nil }) {
        let count = SignalCounter()
        for (number, name) in [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM"), (SIGHUP, "SIGHUP")] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                if count.increment() == 1 {
                    onFirst(name, number)
                } else if number != SIGHUP {
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
