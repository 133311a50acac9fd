#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
/// `CancellationError` when the ``WakeSignal`` fires. Without inotify (other systems, or
/// `inotify_init1` failing) it polls every 250 ms.
///
/// Owns the inotify descriptor and its buffers, released in `deinit`; no allocation per event.
///
/// Thread safety: not `Sendable`; confined to the follower's thread. Only its ``WakeSignal`` is
/// shared (with the task's cancellation handler).
final class FileWatcher {
    /// Timeout of a wait while everything is watched, in milliseconds.
    static let safetyInterval: CInt = 1000
    /// Timeout of a wait while something is not watched, in milliseconds.
    static let pollInterval: CInt = 250

    private let wake: WakeSignal
    private let path: String
    private let components: PathComponents
    private let name: [UInt8]
    /// The inotify descriptor, -1 when inotify is not available.
    private let inotify: CInt
    private var directoryWatch: CInt = -1
    private var currentWatch: CInt = -1
    private var pendingWatch: CInt = -1
    /// Whether a file that should be watched (current or pending) could not be.
    private var currentMissed = false
    private var pendingMissed = false
    private let events: UnsafeMutableRawBufferPointer
    private let pollSet: UnsafeMutablePointer<pollfd>

    /// Creates a watcher for `path`, starting with the watch on its directory (if it exists).
    init(path: String, wake: WakeSignal) {
        self.wake = wake
        self.path = path
        components = PathComponents(path)
        name = Array(components.name.utf8)
        #if os(Linux)
        inotify = inotify_init1(CInt(IN_NONBLOCK | IN_CLOEXEC))
        #else
        inotify = -1
        #endif
        events = .allocate(byteCount: 16 * 1024, alignment: 8)
        pollSet = .allocate(capacity: 2)
        addDirectoryWatchIfMissing()
    }

    deinit {
        if inotify >= 0 { SystemCall.close(inotify) }
        events.deallocate()
        pollSet.deallocate()
    }

    /// Whether inotify is in use (false: polling only).
    var usesInotify: Bool { inotify >= 0 }

    /// Whether every wanted watch is in place (waits then use the long safety timeout).
    var isFullyWatched: Bool {
        inotify >= 0 && directoryWatch >= 0 && !currentMissed && !pendingMissed
    }

    /// Watches the file open as `descriptor` (the one being read), replacing the previous one.
    func watchCurrent(descriptor: CInt) {
        unwatchCurrent()
        #if os(Linux)
        guard inotify >= 0 else { return }
        currentWatch = inotify_add_watch(inotify, "/proc/self/fd/\(descriptor)", Self.fileEvents)
        currentMissed = currentWatch < 0
        #endif
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
        #if os(Linux)
        guard inotify >= 0 else { return }
        pendingWatch = inotify_add_watch(inotify, path, Self.fileEvents)
        pendingMissed = pendingWatch < 0
        #endif
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
        while true {
            try wake.checkCancelled()
            pollSet[0] = pollfd(fd: wake.readEnd, events: Int16(POLLIN), revents: 0)
            pollSet[1] = pollfd(fd: inotify, events: Int16(POLLIN), revents: 0)
            let ready = poll(pollSet, inotify >= 0 ? 2 : 1, timeout)
            if ready < 0 && errno == EINTR { continue }
            try wake.checkCancelled()
            if ready <= 0 { return }
            if inotify >= 0 && pollSet[1].revents != 0 && readEvents() { return }
            // Only events about other names in the directory: keep waiting.
        }
    }

    private func addDirectoryWatchIfMissing() {
        #if os(Linux)
        guard inotify >= 0, directoryWatch < 0 else { return }
        directoryWatch = inotify_add_watch(inotify, components.directory, Self.directoryEvents)
        #endif
    }

    private func remove(_ watch: CInt, unlessAlso other: CInt) {
        #if os(Linux)
        // Two watches on one inode share a descriptor; the kernel may also have dropped it already
        // (EINVAL), which is fine.
        guard inotify >= 0, watch >= 0, watch != other else { return }
        _ = inotify_rm_watch(inotify, watch)
        #endif
    }

    /// Reads every queued event; returns whether any concerns the name or a watched file.
    private func readEvents() -> Bool {
        #if os(Linux)
        var relevant = false
        let headerSize = MemoryLayout<inotify_event>.size
        while true {
            let count = SystemCall.retryingInterrupts { read(inotify, events.baseAddress, events.count) }
            if count <= 0 { return relevant }  // EAGAIN: all read
            var offset = 0
            while offset + headerSize <= count {
                let watch = events.loadUnaligned(fromByteOffset: offset, as: CInt.self)
                let mask = events.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                let length = Int(events.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                let nameBytes = UnsafeRawBufferPointer(rebasing: events[(offset + headerSize)..<min(count, offset + headerSize + length)])
                if handle(watch: watch, mask: mask, name: nameBytes) { relevant = true }
                offset += headerSize + length
            }
        }
        #else
        return true
        #endif
    }

    #if os(Linux)
    private static let fileEvents = UInt32(bitPattern: IN_MODIFY | IN_ATTRIB | IN_MOVE_SELF | IN_DELETE_SELF)
    private static let directoryEvents = UInt32(
        bitPattern: IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

    /// Updates the watch slots for one event; returns whether it is relevant.
    private func handle(watch: CInt, mask: UInt32, name: UnsafeRawBufferPointer) -> Bool {
        if mask & UInt32(bitPattern: IN_Q_OVERFLOW) != 0 { return true }
        let ignored = mask & UInt32(bitPattern: IN_IGNORED) != 0
        if watch == directoryWatch {
            if ignored {
                directoryWatch = -1
                return true
            }
            if mask & UInt32(bitPattern: IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
                // The directory went away or moved: watch whatever the path's directory is next.
                _ = inotify_rm_watch(inotify, directoryWatch)
                directoryWatch = -1
                return true
            }
            return matchesName(name)
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

    /// Whether the NUL-padded name of an event is the followed name.
    private func matchesName(_ eventName: UnsafeRawBufferPointer) -> Bool {
        let length = eventName.firstIndex(of: 0) ?? eventName.count
        guard length == name.count else { return false }
        for index in 0..<length where eventName[index] != name[index] { return false }
        return true
    }
    #endif
}

@available(*, unavailable, message: "confined to the follower's thread")
extension FileWatcher: Sendable {}
