import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One look at a running process during a soak: its resident memory, open descriptors and
/// threads, and how far the workload had got (requests answered, or lines delivered).
///
/// Thread safety: an immutable value.
struct SoakSample: Sendable {
    /// Seconds since the soak started.
    let seconds: Double
    let rssKiB: Int
    /// The anonymous part of `rssKiB` (heap, buffers) and the mapped files' part.
    let anonymousKiB: Int
    let fileKiB: Int
    let openFiles: Int
    let threads: Int
    let progress: Int
}

/// Samples a process every `interval` seconds on a thread of its own until ``stop()``:
/// `VmRSS` and `Threads` from `/proc/PID/status`, the entries of `/proc/PID/fd`, and the
/// workload's progress as `progress` reports it.
///
/// Thread safety: the samples are behind a `LockedValue`; ``stop()`` and ``samples`` are
/// callable from any thread.
final class SoakSampler: Sendable {
    private let taken = LockedValue<[SoakSample]>([])
    private let running = LockedValue(true)
    private let done = DispatchSemaphore(value: 0)

    init(pid: pid_t, interval: Double, progress: @escaping @Sendable () -> Int) {
        let start = MonotonicClock.now()
        let thread = Thread { [self] in
            var next = start
            while running.get() {
                if let sample = Self.look(at: pid, since: start, progress: progress()) {
                    taken.update { $0.append(sample) }
                }
                next += UInt64(interval * 1e9)
                while running.get() && MonotonicClock.now() < next { MonotonicClock.sleep(seconds: min(0.05, interval)) }
            }
            done.signal()
        }
        thread.name = "bench.soak-sampler"
        thread.start()
    }

    /// Takes one last sample of `pid` if it still runs, stops, and returns every sample.
    func stop() -> [SoakSample] {
        running.set(false)
        done.wait()
        return taken.get()
    }

    /// One sample of `pid`, or nil once it is gone.
    static func look(at pid: pid_t, since start: UInt64, progress: Int) -> SoakSample? {
        guard let status = try? ProcStatus.read(pid: pid),
            let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")
        else { return nil }
        return SoakSample(
            seconds: MonotonicClock.seconds(MonotonicClock.now() - start), rssKiB: status.rssKiB, anonymousKiB: status.anonymousKiB, fileKiB: status.fileKiB,
            openFiles: descriptors.count,
            threads: status.threads, progress: progress)
    }
}
