#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Enlarges a pipe's kernel buffer with `fcntl(F_SETPIPE_SZ)` (Linux, `fcntl(2)`), so one
/// `read(2)` or `write(2)` moves up to that much instead of the default 64 KiB: fewer system
/// calls and wake-ups per byte, for a fixed amount of kernel memory.
///
/// Thread safety: stateless; callable from any thread.
package enum PipeCapacity {
    /// `F_SETPIPE_SZ`, which Glibc's Swift module does not export (`<linux/fcntl.h>`:
    /// `F_LINUX_SPECIFIC_BASE + 7`).
    private static let setPipeSize: CInt = 1031

    /// Asks for a buffer of `bytes` on `fd` when it is a pipe; returns whether the kernel took
    /// it. Best effort: a descriptor that is not a pipe, and a request over
    /// `/proc/sys/fs/pipe-max-size` for an unprivileged user (EPERM), are left as they are.
    @discardableResult
    package static func enlarge(_ fd: CInt, to bytes: Int) -> Bool {
        #if os(Linux)
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFIFO else { return false }
        return fcntl(fd, setPipeSize, CInt(clamping: bytes)) >= 0
        #else
        return false
        #endif
    }
}
