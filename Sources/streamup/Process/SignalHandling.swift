import Foundation
import StreamUpHTTP

#if canImport(Glibc)
import Glibc
#endif

/// Every signal streamup takes, in one place. SIGINT, SIGTERM and SIGHUP are delivered as a
/// ``Signal`` to one handler (``install(_:)``), in order, on one serial queue; what they mean is
/// the handler's: a command alone stops on the first (``installStop(onFirst:onSecond:)``),
/// `streamup run` reloads on SIGHUP and hands stops to its supervision.
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
    /// A signal streamup acts on.
    ///
    /// Thread safety: a value type.
    enum Signal: Sendable, CaseIterable {
        case interrupt, terminate, hangUp

        var number: Int32 {
            switch self {
            case .interrupt: SIGINT
            case .terminate: SIGTERM
            case .hangUp: SIGHUP
            }
        }

        var name: String {
            switch self {
            case .interrupt: "SIGINT"
            case .terminate: "SIGTERM"
            case .hangUp: "SIGHUP"
            }
        }
    }

    nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []
    private static let queue = DispatchQueue(label: "streamup.signals")

    /// What the first stop's line ends with.
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

    /// Delivers SIGINT, SIGTERM and SIGHUP to `handler`, one at a time, in the order they came;
    /// call once, from the main task, before starting work.
    static func install(_ handler: @escaping @Sendable (Signal) -> Void) {
        for each in Signal.allCases {
            signal(each.number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: each.number, queue: queue)
            source.setEventHandler { handler(each) }
            source.resume()
            sources.append(source)
        }
    }

    /// A command alone: the first SIGINT, SIGTERM or SIGHUP calls `onFirst` with the signal's
    /// name and number; a second SIGINT/SIGTERM prints what `onSecond` says was lost (one line;
    /// nil: nothing to say) and exits at once with status 130. A SIGHUP after the first signal
    /// changes nothing: a closed terminal or ssh session often sends two (the kernel's to the
    /// foreground job, then the shell's to each of its jobs), and the stop they ask for is
    /// already under way.
    static func installStop(onFirst: @escaping @Sendable (_ name: String, _ number: Int32) -> Void, onSecond: @escaping @Sendable () -> String? = { nil }) {
        let count = SignalCounter()
        install { signal in
            if count.increment() == 1 {
                onFirst(signal.name, signal.number)
            } else if signal != .hangUp {
                if let line = onSecond() { Terminal.error("\(signal.name) again: stopped at once; \(line)") }
                exit(ExitStatus.interrupted)
            }
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
