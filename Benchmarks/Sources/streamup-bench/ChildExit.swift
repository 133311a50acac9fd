#if canImport(Glibc)
import Glibc
#endif

/// How a child ended and what it cost, as `wait4(2)` reports it (for a measured child: as GNU
/// time reports it for the program it ran, see ``ChildProcess``).
///
/// Thread safety: an immutable value; safe to send anywhere.
struct ChildExit: Sendable {
    /// The exit code, or `-signal` when a signal ended the child.
    let status: Int32
    /// User CPU seconds of the child (all its threads).
    let userSeconds: Double
    /// System CPU seconds of the child.
    let systemSeconds: Double
    /// Peak resident set size in KiB (`ru_maxrss`).
    let maxRSSKiB: Int
    /// ``MonotonicClock`` time at which `wait4` returned.
    let endNanos: UInt64

    var cpuSeconds: Double { userSeconds + systemSeconds }
    var succeeded: Bool { status == 0 }
}
