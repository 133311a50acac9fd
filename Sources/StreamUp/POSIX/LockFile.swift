import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The lock that makes one process the only user of a spool or a state file: `flock(2)` on a
/// lock file, taken without waiting, held for as long as its descriptor is open, and released by
/// the kernel when the process ends, however it ends.
///
/// Thread safety: stateless; the descriptor it returns belongs to the caller.
enum LockFile {
    /// Opens the lock file at `path` (made owner-only if missing) and takes its lock.
    /// - Parameter operation: what opening is, for the error (`"cannot open DIR/lock"`).
    /// - Returns: the descriptor that holds the lock, or nil when another process holds it.
    /// - Throws: ``StreamUpError`` `.io` when the file cannot be opened.
    static func take(_ path: String, _ operation: @autoclosure () -> String) throws(StreamUpError) -> CInt? {
        let descriptor = try SystemCall.runBlocking(operation()) {
            SystemCall.open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode: 0o600)
        }
        guard SystemCall.retryingInterrupts({ flock(descriptor, LOCK_EX | LOCK_NB) }) == 0 else {
            SystemCall.close(descriptor)
            return nil
        }
        return descriptor
    }
}
