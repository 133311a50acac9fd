#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How many files this process may have open (`RLIMIT_NOFILE`, `getrlimit(2)`), how many it has
/// open (`/proc/self/fd`), and raising the soft limit to the hard one (`setrlimit(2)`): a
/// shipper of many files and pipelines needs more than the soft 1,024 systemd and most shells
/// give, and the hard limit is there to be taken (systemd's own advice). What a process started
/// from here gets back is the soft limit it was given (``startedSoftLimit``): programs that use
/// `select(2)` break on descriptors past 1,024.
///
/// Thread safety: the limits are the kernel's; ``startedSoftLimit`` is written once, at start,
/// before any other thread runs.
package enum DescriptorLimit {
    /// The fewest descriptors streamup starts with: its standard descriptors, signal and timer
    /// sources, URLSession's and a pipe or two (a single upload was measured to need 13).
    package static let least: UInt64 = 32

    /// The soft limit the process was started with (before ``raiseToHard()``).
    nonisolated(unsafe) package private(set) static var startedSoftLimit: UInt64?

    /// The soft and hard limits now (`RLIM_INFINITY` as `UInt64.max`).
    package static var current: (soft: UInt64, hard: UInt64) {
        var limit = rlimit()
        guard getrlimit(Self.resource, &limit) == 0 else { return (UInt64.max, UInt64.max) }
        return (UInt64(limit.rlim_cur), UInt64(limit.rlim_max))
    }

    /// Raises the soft limit to the hard one; call first thing, on the main thread. Returns the
    /// limits after (unchanged when the kernel refused).
    @discardableResult
    package static func raiseToHard() -> (soft: UInt64, hard: UInt64) {
        var limit = rlimit()
        guard getrlimit(Self.resource, &limit) == 0 else { return current }
        if startedSoftLimit == nil { startedSoftLimit = UInt64(limit.rlim_cur) }
        guard limit.rlim_cur < limit.rlim_max else { return current }
        var raised = limit
        raised.rlim_cur = limit.rlim_max
        if setrlimit(Self.resource, &raised) != 0 {
            // macOS refuses RLIM_INFINITY for files: OPEN_MAX is the most it takes.
            raised.rlim_cur = min(limit.rlim_max, rlim_t(10_240))
            _ = setrlimit(Self.resource, &raised)
        }
        return current
    }

    /// Sets the soft limit to `soft` (at most the hard limit): in a child, before it becomes
    /// another program, the limit its parent was started with.
    package static func restore(softLimit soft: UInt64) {
        var limit = rlimit()
        guard getrlimit(Self.resource, &limit) == 0 else { return }
        limit.rlim_cur = rlim_t(min(soft, UInt64(limit.rlim_max)))
        _ = setrlimit(Self.resource, &limit)
    }

    /// The descriptors open now (Linux: the entries of `/proc/self/fd`, less the one listing
    /// them); nil where it cannot be told.
    package static var openCount: Int? {
        #if os(Linux)
        guard let directory = opendir("/proc/self/fd") else {
            // Not even the listing could be opened: every descriptor is taken.
            return errno == EMFILE ? Int(clamping: current.soft) : nil
        }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            // Only the name's first byte: an entry is as long as its name, not the whole
            // `dirent` (copying `pointee` reads past the last one, into an unmapped page).
            if DirectoryListing.name(of: entry).first != UInt8(ascii: ".") { count += 1 }
        }
        return count - 1
        #else
        return nil
        #endif
    }

    /// Whether the process has (nearly) no descriptor left: fewer than `margin` below its soft
    /// limit. A failure to open a socket or a file is then this limit, not the network or the
    /// file.
    package static func isExhausted(margin: Int = 8) -> Bool {
        guard let open = openCount else { return false }
        let soft = current.soft
        return soft != UInt64.max && UInt64(open + margin) >= soft
    }

    #if os(Linux)
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resource = RLIMIT_NOFILE
    #endif
}
