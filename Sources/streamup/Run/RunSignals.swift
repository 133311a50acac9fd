import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The signals of `streamup run`, kept apart from ``SignalHandling`` (the single commands'):
/// SIGHUP reloads the pipelines file; the first SIGINT/SIGTERM stops every pipeline
/// gracefully, a second exits at once with status 130.
///
/// Thread safety: handlers run on a private serial queue; the sources are kept alive in a
/// global written once, before any signal can arrive.
enum RunSignals {
    nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []
    private static let queue = DispatchQueue(label: "streamup.run.signals")

    /// Installs the handlers; call once, from the main task, before starting pipelines.
    static func install(reload: @escaping @Sendable () -> Void, stop: @escaping @Sendable (_ name: String) -> Void) {
        let stops = StopCounter()
        for (number, name) in [(SIGHUP, "SIGHUP"), (SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                guard number != SIGHUP else { return reload() }
                guard stops.increment() == 1 else {
                    Terminal.error("\(name) again: stopped at once; what was not acknowledged is lost unless a pipeline has --spool")
                    exit(ExitStatus.interrupted)
                }
                stop(name)
            }
            source.resume()
            sources.append(source)
        }
    }
}

/// Counts stop signals; only touched on `RunSignals.queue`.
///
/// Thread safety: confined to `RunSignals.queue`.
private final class StopCounter: @unchecked Sendable {
    private var count = 0
    func increment() -> Int {
        count += 1
        return count
    }
}
