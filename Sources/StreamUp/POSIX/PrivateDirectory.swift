#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A directory only its owner may read, for what streamup keeps on disk (the spool, the dead
/// letters): records that may hold anything the input held.
///
/// Thread safety: stateless.
enum PrivateDirectory {
    /// Makes the directory at `path`, owner-only whatever the umask, unless one is there.
    /// - Parameter operation: what failed, for the error (`"cannot create spool directory DIR"`).
    /// - Throws: ``StreamUpError`` `.io` when there is none and none can be made.
    static func make(_ path: String, _ operation: @autoclosure () -> String) throws(StreamUpError) {
        if mkdir(path, 0o700) == 0 {
            _ = chmod(path, 0o700)  // whatever the umask
        } else if errno != EEXIST {
            throw StreamUpError(.io, operation(), errno: errno)
        }
    }
}
