#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One inotify instance (`inotify_init1(2)`, non-blocking and close-on-exec) and the waiting
/// around it that the file tailer uses: block in `poll(2)` until an event is queued, a
/// timeout passes, or a `WakePipe` fires; then read every queued event into a buffer
/// allocated once.
///
/// Watches are added and removed by the owner, which keeps its own map from watch descriptors
/// to what they watch (the library's `TailWatcher`, for the files and directories it follows).
/// Where inotify is unavailable (other systems, or `inotify_init1` failing) ``isAvailable`` is
/// false, every watch fails, and ``wait(timeout:wake:)`` only sleeps: the owner then polls.
///
/// Owns the inotify descriptor and its buffers, released in `deinit`; no allocation per event.
///
/// Thread safety: not `Sendable`; confined to the following thread. Only the `WakePipe`
/// is shared (with the task's cancellation handler).
package final class Inotify {
    /// The inotify descriptor, -1 when inotify is not available.
    private let descriptor: CInt
    private let events: UnsafeMutableRawBufferPointer
    private let pollSet: UnsafeMutablePointer<pollfd>

    package init() {
        #if os(Linux)
        descriptor = inotify_init1(CInt(IN_NONBLOCK | IN_CLOEXEC))
        #else
        descriptor = -1
        #endif
        events = .allocate(byteCount: 16 * 1024, alignment: 8)
        pollSet = .allocate(capacity: 2)
    }

    deinit {
        if descriptor >= 0 { SystemCall<SystemCallError>.close(descriptor) }
        events.deallocate()
        pollSet.deallocate()
    }

    /// Whether inotify is in use (false: the owner polls).
    package var isAvailable: Bool { descriptor >= 0 }

    /// `inotify_add_watch(2)` of `path` for `mask`: the watch descriptor, or the errno that
    /// refused it (ENOENT for a missing path, ENOSPC past `fs.inotify.max_user_watches`,
    /// ENOSYS without inotify). Watching an inode that is already watched returns the same
    /// descriptor with the new mask.
    package func addWatch(_ path: String, mask: UInt32) -> Result<CInt, WatchError> {
        #if os(Linux)
        guard descriptor >= 0 else { return .failure(WatchError(errno: ENOSYS)) }
        let watch = inotify_add_watch(descriptor, path, mask)
        return watch >= 0 ? .success(watch) : .failure(WatchError(errno: errno))
        #else
        return .failure(WatchError(errno: ENOSYS))
        #endif
    }

    /// `inotify_rm_watch(2)`; a watch the kernel already dropped (EINVAL) is fine.
    package func removeWatch(_ watch: CInt) {
        #if os(Linux)
        guard descriptor >= 0, watch >= 0 else { return }
        _ = inotify_rm_watch(descriptor, watch)
        #endif
    }

    /// Blocks until an event is queued (returns true), `timeout` milliseconds pass (false; a
    /// negative timeout waits for ever), or `wake` fires (throws `CancellationError`).
    package func wait(timeout: CInt, wake: WakePipe) throws(CancellationError) -> Bool {
        while true {
            try wake.checkCancelled()
            pollSet[0] = pollfd(fd: wake.readEnd, events: Int16(POLLIN), revents: 0)
            pollSet[1] = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(pollSet, descriptor >= 0 ? 2 : 1, timeout)
            if ready < 0 && errno == EINTR { continue }
            try wake.checkCancelled()
            return ready > 0 && descriptor >= 0 && pollSet[1].revents != 0
        }
    }

    /// Reads every queued event and hands each to `body`: its watch descriptor, its mask and
    /// its name (NUL-padded; empty for events about the watched inode itself), valid only
    /// during the call.
    package func readEvents(_ body: (_ watch: CInt, _ mask: UInt32, _ name: UnsafeRawBufferPointer) -> Void) {
        #if os(Linux)
        guard descriptor >= 0 else { return }
        let headerSize = MemoryLayout<inotify_event>.size
        while true {
            let fd = descriptor
            let count = SystemCall<SystemCallError>.retryingInterrupts { read(fd, events.baseAddress, events.count) }
            if count <= 0 { return }  // EAGAIN: all read
            var offset = 0
            while offset + headerSize <= count {
                let watch = events.loadUnaligned(fromByteOffset: offset, as: CInt.self)
                let mask = events.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                let length = Int(events.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                let nameEnd = min(count, offset + headerSize + length)
                body(watch, mask, UnsafeRawBufferPointer(rebasing: events[(offset + headerSize)..<nameEnd]))
                offset += headerSize + length
            }
        }
        #endif
    }

    /// The name of an event without its NUL padding, compared with `name`'s UTF-8 bytes.
    package static func name(_ eventName: UnsafeRawBufferPointer, equals name: [UInt8]) -> Bool {
        let length = eventName.firstIndex(of: 0) ?? eventName.count
        guard length == name.count else { return false }
        for index in 0..<length where eventName[index] != name[index] { return false }
        return true
    }

    /// The name of an event as a string (NUL padding removed; invalid UTF-8 repaired).
    package static func name(_ eventName: UnsafeRawBufferPointer) -> String {
        let length = eventName.firstIndex(of: 0) ?? eventName.count
        return String(decoding: eventName[..<length], as: UTF8.self)
    }

    /// Why a watch could not be added.
    ///
    /// Thread safety: a value type.
    package struct WatchError: Error, Equatable {
        package let errno: CInt
    }

    /// The event masks the followers use (0 where inotify does not exist).
    ///
    /// Thread safety: constants.
    package enum Mask {
        #if os(Linux)
        package static let modify = UInt32(bitPattern: IN_MODIFY)
        package static let attributes = UInt32(bitPattern: IN_ATTRIB)
        package static let moveSelf = UInt32(bitPattern: IN_MOVE_SELF)
        package static let deleteSelf = UInt32(bitPattern: IN_DELETE_SELF)
        package static let create = UInt32(bitPattern: IN_CREATE)
        package static let movedTo = UInt32(bitPattern: IN_MOVED_TO)
        package static let movedFrom = UInt32(bitPattern: IN_MOVED_FROM)
        package static let delete = UInt32(bitPattern: IN_DELETE)
        package static let onlyDirectory = UInt32(bitPattern: IN_ONLYDIR)
        package static let ignored = UInt32(bitPattern: IN_IGNORED)
        package static let overflow = UInt32(bitPattern: IN_Q_OVERFLOW)
        package static let isDirectory = UInt32(bitPattern: IN_ISDIR)
        #else
        package static let modify: UInt32 = 0
        package static let attributes: UInt32 = 0
        package static let moveSelf: UInt32 = 0
        package static let deleteSelf: UInt32 = 0
        package static let create: UInt32 = 0
        package static let movedTo: UInt32 = 0
        package static let movedFrom: UInt32 = 0
        package static let delete: UInt32 = 0
        package static let onlyDirectory: UInt32 = 0
        package static let ignored: UInt32 = 0
        package static let overflow: UInt32 = 0
        package static let isDirectory: UInt32 = 0
        #endif
        /// A file being read: written, truncated, renamed, deleted, its link count changed.
        package static let file = modify | attributes | moveSelf | deleteSelf
        /// A directory whose entries are followed: names created, moved in or out, deleted; the
        /// directory itself going away.
        package static let directory = create | movedTo | movedFrom | delete | deleteSelf | moveSelf | onlyDirectory
    }
}

@available(*, unavailable, message: "confined to the following thread")
extension Inotify: Sendable {}
