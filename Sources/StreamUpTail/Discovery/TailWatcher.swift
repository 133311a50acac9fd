import StreamUp
import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Tells a ``FileTailer``'s thread when a followed file was written to, renamed or deleted, or
/// when a name appeared or went away in a directory its patterns reach, so that it reads or
/// rescans right then instead of polling.
///
/// On Linux it uses one ``Inotify``:
/// - a watch per directory of the last ``TailScan`` (`IN_CREATE`, `IN_MOVED_TO`,
///   `IN_MOVED_FROM`, `IN_DELETE`, `IN_ATTRIB`, the directory itself going away), reported only
///   for names that can change what is selected (``TailScan/Interest``);
/// - a watch per followed file (`IN_MODIFY`, `IN_ATTRIB`, `IN_MOVE_SELF`, `IN_DELETE_SELF`),
///   added through `/proc/self/fd/N` so it is that very file whatever its name, and kept while
///   the file is closed for want of a descriptor (a watch is on the inode, not on the
///   descriptor), so a write to a waiting file is noticed too.
///
/// A watch that cannot be added (the `fs.inotify.max_user_watches` limit, or no inotify) is
/// remembered; the tailer then polls every 250 ms (``isFullyWatched``).
///
/// Thread safety: not `Sendable`; confined to the tailer's thread. Only its `WakePipe` is
/// shared (with the task's cancellation handler).
final class TailWatcher {
    /// What woke the tailer.
    ///
    /// Thread safety: a value type.
    enum Event: Equatable {
        /// The file was written to (or truncated).
        case modified(FileIdentity)
        /// The file was renamed, deleted, or its link count changed: its name must be checked.
        case renamed(FileIdentity)
        /// A name that matters appeared or went away in a watched directory, or a directory
        /// went away: the patterns must be walked again.
        case directoryChanged
        /// The kernel dropped events (queue overflow): check everything.
        case overflow
    }

    /// Entries created, moved, deleted, and changed in their attributes (a `chmod` that makes a
    /// skipped file readable), and the directory itself going away.
    private static let directoryMask = Inotify.Mask.directory | Inotify.Mask.attributes

    private let inotify = Inotify()
    private let wake: WakePipe
    private var directoryWatches: [String: CInt] = [:]
    private var interests: [String: TailScan.Interest] = [:]
    private var directoriesByWatch: [CInt: Set<String>] = [:]
    private var fileWatches: [FileIdentity: CInt] = [:]
    private var filesByWatch: [CInt: FileIdentity] = [:]
    /// Directories and files that should be watched but are not.
    private var unwatchedDirectories: Set<String> = []
    private var unwatchedFiles: Set<FileIdentity> = []

    init(wake: WakePipe) {
        self.wake = wake
    }

    /// Whether inotify is in use at all.
    var usesInotify: Bool { inotify.isAvailable }

    /// Whether every wanted watch is in place (else the tailer polls every 250 ms).
    var isFullyWatched: Bool {
        inotify.isAvailable && unwatchedDirectories.isEmpty && unwatchedFiles.isEmpty
    }

    /// Whether the file `identity` has a watch.
    func isWatched(_ identity: FileIdentity) -> Bool { fileWatches[identity] != nil }

    /// Watches exactly `directories` (adding and removing watches); returns the directories
    /// newly refused, with the errno (ENOENT when one went away meanwhile is not reported), and
    /// whether a watch was added (what changed in that directory between the walk and its watch
    /// was seen by neither: the caller walks again).
    func watchDirectories(_ directories: [String: TailScan.Interest]) -> (refused: [(path: String, errno: Int32)], added: Bool) {
        interests = directories
        for (path, watch) in directoryWatches where directories[path] == nil {
            directoryWatches[path] = nil
            directoriesByWatch[watch]?.remove(path)
            if directoriesByWatch[watch]?.isEmpty == true {
                directoriesByWatch[watch] = nil
                inotify.removeWatch(watch)
            }
        }
        unwatchedDirectories = unwatchedDirectories.filter { directories[$0] != nil }
        var refused: [(path: String, errno: Int32)] = []
        var added = false
        for path in directories.keys where directoryWatches[path] == nil {
            switch inotify.addWatch(path, mask: Self.directoryMask) {
            case .success(let watch):
                added = true
                directoryWatches[path] = watch
                directoriesByWatch[watch, default: []].insert(path)
                unwatchedDirectories.remove(path)
            case .failure(let error):
                if unwatchedDirectories.insert(path).inserted, error.errno != ENOENT, inotify.isAvailable {
                    refused.append((path, error.errno))
                }
            }
        }
        return (refused, added)
    }

    /// Watches the followed file `identity`, open as `descriptor`; returns the errno when the
    /// watch is refused.
    @discardableResult
    func watchFile(_ identity: FileIdentity, descriptor: CInt) -> Int32? {
        guard fileWatches[identity] == nil else { return nil }
        switch inotify.addWatch("/proc/self/fd/\(descriptor)", mask: Inotify.Mask.file) {
        case .success(let watch):
            fileWatches[identity] = watch
            filesByWatch[watch] = identity
            unwatchedFiles.remove(identity)
            return nil
        case .failure(let error):
            unwatchedFiles.insert(identity)
            return inotify.isAvailable ? error.errno : nil
        }
    }

    /// Stops watching the file `identity` (dropped).
    func unwatchFile(_ identity: FileIdentity) {
        unwatchedFiles.remove(identity)
        guard let watch = fileWatches.removeValue(forKey: identity) else { return }
        filesByWatch[watch] = nil
        inotify.removeWatch(watch)
    }

    /// Blocks until something happened or `timeout` milliseconds passed (0: only collects what
    /// is queued), and appends what happened to `events`. Throws `CancellationError` once the
    /// wake signal fired.
    func wait(timeout: CInt, into events: inout [Event]) throws(CancellationError) {
        guard try inotify.wait(timeout: timeout, wake: wake) else { return }
        inotify.readEvents { watch, mask, name in
            if let event = event(watch: watch, mask: mask, name: name) { events.append(event) }
        }
    }

    /// The event one inotify record stands for, updating the watch maps.
    private func event(watch: CInt, mask: UInt32, name: UnsafeRawBufferPointer) -> Event? {
        if mask & Inotify.Mask.overflow != 0 { return .overflow }
        let ignored = mask & Inotify.Mask.ignored != 0
        if let identity = filesByWatch[watch] {
            if ignored {
                // The inode is gone (deleted and closed): nothing more will come from it.
                filesByWatch[watch] = nil
                fileWatches[identity] = nil
                return .renamed(identity)
            }
            if mask & Inotify.Mask.modify != 0 && mask & (Inotify.Mask.attributes | Inotify.Mask.moveSelf | Inotify.Mask.deleteSelf) == 0 {
                return .modified(identity)
            }
            return .renamed(identity)
        }
        guard let paths = directoriesByWatch[watch] else { return nil }
        if ignored || mask & (Inotify.Mask.deleteSelf | Inotify.Mask.moveSelf) != 0 {
            // The directory went away or moved: the next walk watches what is there then.
            directoriesByWatch[watch] = nil
            for path in paths { directoryWatches[path] = nil }
            if !ignored { inotify.removeWatch(watch) }
            return .directoryChanged
        }
        let entry = Inotify.name(name)
        return paths.contains { interests[$0]?.concerns(entry) ?? true } ? .directoryChanged : nil
    }
}

@available(*, unavailable, message: "confined to the tailer's thread")
extension TailWatcher: Sendable {}
