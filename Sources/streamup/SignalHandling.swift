import Foundation
#if canImport(Glibc)
import Glibc
#endif
import StreamUpHTTP

/// Turns SIGINT and SIGTERM into a graceful stop: the first one calls `onFirst`, a second one
/// exits at once with status 130. Also ignores SIGPIPE for the whole process (the one place
/// that does), so a closed stdout or socket is an error return, not death.
///
/// Thread safety: handlers run on a private serial queue; the sources are kept alive in a
/// global that is written once, before any signal can arrive.
enum SignalHandling {
    nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []
    private static let queue = DispatchQueue(label: "streamup.signals")

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
    static func install(onFirst: @escaping @Sendable () -> Void) {
        let count = SignalCounter()
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                if count.increment() == 1 {
                    onFirst()
                } else {
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
