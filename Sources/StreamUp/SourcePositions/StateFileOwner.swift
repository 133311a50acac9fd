import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one process that keeps a state file: two that shared one would each send every line
/// (both resume from the same positions). Held with `flock(2)` on `.NAME.lock` beside the file
/// for as long as this value lives (the state file itself is replaced by `rename(2)` on each
/// save, so a lock on it would not last), and released by the kernel when the process ends,
/// however it ends. Claiming also proves the state can be saved (a file can be made beside
/// it), so a run that could never keep its place is refused at start rather than after it
/// has sent lines it cannot remember.
///
/// A state file this process holds already (another pipeline of `streamup run` names it by
/// another spelling, `s1` and `./s1`, or an earlier copy has not let go of it) is told apart from
/// one another process holds: the lock files held here are known by their identity.
///
/// Thread safety: immutable after `claim`; the descriptor is closed once, in `deinit`; the
/// identities held by this process are guarded by `heldHere`'s lock.
package final class StateFileOwner: Sendable {
    private let lock: CInt
    private let identity: FileIdentity?

    /// The lock files this process holds, by identity.
    private static let heldHere = Mutex<Set<FileIdentity>>([])

    private init(lock: CInt, identity: FileIdentity?) {
        self.lock = lock
        self.identity = identity
    }

    deinit {
        if let identity { _ = Self.heldHere.withLock { $0.remove(identity) } }
        SystemCall.close(lock)
    }

    /// Takes the state file at `path` for this process.
    /// - Throws: ``StreamUpError`` `.io` when another process holds it, or its directory does
    ///   not take new files (permissions, a read-only file system).
    package static func claim(_ path: String) throws(StreamUpError) -> StateFileOwner {
        let components = PathComponents(path)
        let separator = components.directory.hasSuffix("/") ? "" : "/"
        let beside = components.directory + separator + "." + components.name
        let probe = beside + ".\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let written = SystemCall.retryingInterrupts { SystemCall.open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o600) }
        guard written >= 0 else {
            throw StreamUpError(.io, "cannot save the state file \(path) (a file cannot be made beside it)", errno: errno)
        }
        SystemCall.close(written)
        unlink(probe)
        guard let lock = try LockFile.take(beside + ".lock", "cannot open \(beside).lock, the state file's lock") else {
            let existing = (try? FileStatus.of(path: beside + ".lock", throwing: StreamUpError.self))??.identity
            if let existing, heldHere.withLock({ $0.contains(existing) }) {
                throw StreamUpError(
                    .io,
                    "the state file \(path) is in use by this streamup process already (under another spelling of its path, or by a copy that is stopping); give each pipeline a --state of its own"
                )
            }
            throw StreamUpError(.io, "the state file \(path) is in use by another streamup process; give each a --state of its own")
        }
        let identity = try? FileStatus.of(descriptor: lock, throwing: StreamUpError.self).identity
        if let identity { _ = heldHere.withLock { $0.insert(identity) } }
        // What a kill in the middle of a save left (the state is saved many times a second).
        AtomicFile.removeLeftovers(of: path)
        return StateFileOwner(lock: lock, identity: identity)
    }
}
