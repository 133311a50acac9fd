#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import StreamUpSystem

/// Tells the follower's thread when the followed name, or a file it reads, may have changed, so
/// that it re-checks right then instead of polling in a loop.
///
/// On Linux it uses inotify (`inotify_init1`, `inotify_add_watch`):
/// - one watch on the name's directory for entries created, moved in or out, or deleted
///   (`IN_CREATE`, `IN_MOVED_TO`, `IN_MOVED_FROM`, `IN_DELETE`), filtered to the followed name,
///   and for the directory itself going away (`IN_DELETE_SELF`, `IN_MOVE_SELF`);
/// - a watch on the file being read (`IN_MODIFY`, `IN_ATTRIB`, `IN_MOVE_SELF`,
///   `IN_DELETE_SELF`), added through `/proc/self/fd/N` so that it is that very file whatever its
///   name is now (a rotated file keeps being watched);
/// - a watch on a new, still empty file at the name while the old one is being drained.
///
/// ``wait()`` returns after a relevant event, or after a timeout so the caller re-checks anyway:
/// 1 s while everything is watched (a safety net, for file systems that miss events), 250 ms
/// while something could not be watched (a directory that does not exist yet). It throws
/// `CancellationError` when the `WakePipe` fires. Without inotify (other systems, or
/// `inotify_init1` failing) it polls every 250 ms.
///
/// The inotify instance and its buffers are an ``Inotify``, shared in form with ``TailWatcher``.
///
/// Thread safety: not `Sendable`; confined to the follower's thread. Only its `WakePipe` is
/// shared (with the task's cancellation handler).
final class FileWatcher {
    /// Timeout of a wait while everything is watched, in milliseconds.
    static let safetyInterval: CInt = 1000
    /// Timeout of a wait while something is not watched, in milliseconds.
    static let pollInterval: CInt = 250

    private let wake: WakePipe
    private let path: String
    private let components: PathComponents
    private let name: [UInt8]
    private let inotify = Inotify()
    private var directoryWatch: CInt = -1
    private var currentWatch: CInt = -1
    private var pendingWatch: CInt = -1
    /// Whether a file that should be watched (current or pending) could not be.
    private var currentMissed = false
    private var pendingMissed = false

    /// Creates a watcher for `path`, starting with the watch on its directory (if it exists).
    init(path: String, wake: WakePipe) {
        self.wake = wake
        self.path = path
        components = PathComponents(path)
        name = Array(components.name.utf8)
        addDirectoryWatchIfMissing()
    }

    /// Whether inotify is in use (false: polling only).
    var usesInotify: Bool { inotify.isAvailable }

    /// Whether every wanted watch is in place (waits then use the long safety timeout).
    var isFullyWatched: Bool {
        inotify.isAvailable && directoryWatch >= 0 && !currentMissed && !pendingMissed
    }

    /// Watches the file open as `descriptor` (the one being read), replacing the previous one.
    func watchCurrent(descriptor: CInt) {
        unwatchCurrent()
        guard inotify.isAvailable else { return }
        currentWatch = (try? inotify.addWatch("/proc/self/fd/\(descriptor)", mask: Inotify.Mask.file).get()) ?? -1
        currentMissed = currentWatch < 0
    }

    /// Stops watching the file being read.
    func unwatchCurrent() {
        remove(currentWatch, unlessAlso: pendingWatch)
        currentWatch = -1
        currentMissed = false
    }

    /// Watches the file at the name now (a new file waiting while the old one is drained).
    func watchPending() {
        unwatchPending()
        guard inotify.isAvailable else { return }
        pendingWatch = (try? inotify.addWatch(path, mask: Inotify.Mask.file).get()) ?? -1
        pendingMissed = pendingWatch < 0
    }

    /// Stops watching the waiting new file.
    func unwatchPending() {
        remove(pendingWatch, unlessAlso: currentWatch)
        pendingWatch = -1
        pendingMissed = false
    }

    /// Blocks until something relevant may have changed, or the timeout passed; throws
    /// `CancellationError` once the wake signal fired.
    func wait() throws(CancellationError) {
        addDirectoryWatchIfMissing()
        let timeout = isFullyWatched ? Self.safetyInterval : Self.pollInterval
        while try inotify.wait(timeout: timeout, wake: wake) {
            var relevant = false
            inotify.readEvents { watch, mask, name in
                if handle(watch: watch, mask: mask, name: name) { relevant = true }
            }
            if relevant { return }
            // Only events about other names in the directory: keep waiting.
        }
    }

    private func addDirectoryWatchIfMissing() {
        guard inotify.isAvailable, directoryWatch < 0 else { return }
        directoryWatch = (try? inotify.addWatch(components.directory, mask: Inotify.Mask.directory).get()) ?? -1
    }

    private func remove(_ watch: CInt, unlessAlso other: CInt) {
        // Two watches on one inode share a descriptor; the kernel may also have dropped it already.
        guard watch >= 0, watch != other else { return }
        inotify.removeWatch(watch)
    }

    /// Updates the watch slots for one event; returns whether it is relevant.
    private func handle(watch: CInt, mask: UInt32, name: UnsafeRawBufferPointer) -> Bool {
        if mask & Inotify.Mask.overflow != 0 { return true }
        let ignored = mask & Inotify.Mask.ignored != 0
        if watch == directoryWatch {
            if ignored {
                directoryWatch = -1
                return true
            }
            if mask & (Inotify.Mask.deleteSelf | Inotify.Mask.moveSelf) != 0 {
                // The directory went away or moved: watch whatever the path's directory is next.
                inotify.removeWatch(directoryWatch)
                directoryWatch = -1
                return true
            }
            return Inotify.name(name, equals: self.name)
        }
        if watch == currentWatch || watch == pendingWatch {
            if ignored {
                if watch == currentWatch { currentWatch = -1 }
                if watch == pendingWatch { pendingWatch = -1 }
            }
            return true
        }
        return false
    }
}

@available(*, unavailable, message: "confined to the follower's thread")
extension FileWatcher: Sendable {}
