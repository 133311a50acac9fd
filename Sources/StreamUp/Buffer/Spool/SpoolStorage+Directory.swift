import Foundation
import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A spool directory deleted (or replaced) while streamup runs: said once on stderr; the
/// files already open still hold their bytes (an unlinked file lives while it is open) and new
/// files are made in memory (`/dev/shm`, unlinked at once), so nothing held is lost while the
/// process runs. Once a directory is at the path again, every held file is written into it
/// and the spool goes on there; a run that ends first ends with exit 74.
extension SpoolStorage {
    /// The device and inode of the directory at `path`, nil when there is none.
    static func identity(of path: String) -> DirectoryIdentity? {
        var status = stat()
        guard stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else { return nil }
        return DirectoryIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }

    /// Whether the spool's directory is gone (deleted or replaced) and not yet written again.
    var isDirectoryGone: Bool { directoryState.withLock { $0.isGone } }

    /// Notices a deleted directory (said once) or one that is back (the held files are written
    /// into it). Called before each write and acknowledgement; a `stat` each.
    func checkDirectory() {
        let now = Self.identity(of: directory)
        let (wasGone, expected) = directoryState.withLock { ($0.isGone, $0.identity) }
        if !wasGone {
            guard now != expected else { return }
            directoryState.withLock { $0.isGone = true }
            let held = max(0, (files.withLock { $0.last?.end } ?? 0) - recordedAcknowledged)
            say(
                "spool \(directory) was deleted while running: the \(held) bytes it held and what comes next are kept by this process only, until a directory is at \(directory) again (if the run ends first, they are lost: exit 74)"
            )
            return
        }
        guard let now else { return }
        do {
            try writeHeldFiles(into: now)
            say("spool \(directory) is back: the held bytes are in it again")
        } catch {
            // Tried again before the next write.
        }
    }

    /// Tells the notice one line.
    func say(_ text: String) {
        let notice = directoryState.withLock { $0.notice }
        notice?(text)
    }

    /// An anonymous file in memory for a new spool file while the directory is gone.
    static func memoryFile() throws(StreamUpError) -> CInt {
        for base in ["/dev/shm", NSTemporaryDirectory()] {
            var template = Array("\(base)/streamup-spool-XXXXXX".utf8CString)
            let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
            guard descriptor >= 0 else { continue }
            template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            return descriptor
        }
        throw StreamUpError(.io, "the spool directory is gone and no file can be made in memory", errno: errno)
    }

    /// Writes every held file (data and index), `marks`, `stream.json` and `lock` into the
    /// directory that is at the path again, then reads and writes there.
    private func writeHeldFiles(into identity: DirectoryIdentity) throws(StreamUpError) {
        guard let lock = try LockFile.take("\(directory)/lock", "cannot open \(directory)/lock") else {
            throw StreamUpError(.io, "spool \(directory) is in use by another streamup process; stop that one, or give each process a --spool of its own")
        }
        var moved: [(start: Int, data: CInt, index: CInt)] = []
        // Copies of the descriptors, taken under the lock: an acknowledgement may close a
        // released file's own ones meanwhile (`dup` is the one system call made under it).
        let held = files.withLock { files in files.map { (file: $0, data: dup($0.data), index: dup($0.index)) } }
        defer {
            for copy in held {
                SystemCall.close(copy.data)
                SystemCall.close(copy.index)
            }
        }
        do throws(StreamUpError) {
            for (file, heldData, heldIndex) in held {
                let data = try Self.create(Self.path(of: file.start, in: directory, suffix: "spool"))
                let index = try Self.create(Self.path(of: file.start, in: directory, suffix: "index"))
                moved.append((file.start, data, index))
                try Self.copy(file.size, from: heldData, to: data, path: Self.path(of: file.start, in: directory, suffix: "spool"))
                try Self.copy(
                    file.entryCount * SpoolIndexEntry.size, from: heldIndex, to: index, path: Self.path(of: file.start, in: directory, suffix: "index"))
            }
            let marks = try SystemCall.runBlocking("cannot open \(directory)/marks") {
                SystemCall.open("\(directory)/marks", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode: 0o600)
            }
            let previous = descriptors.withLock { descriptors in
                defer { descriptors.marks = marks }
                return descriptors
            }
            try writeMarks(SpoolMarks(acknowledged: recordedAcknowledged, newest: files.withLock { $0.last?.start }))
            try saveRecord()
            // Readers may be reading the old descriptors right now: they are closed at the end.
            let (retired, released) = files.withLock { files -> ([CInt], [CInt]) in
                var retired: [CInt] = []
                var released: [CInt] = []
                for entry in moved {
                    guard let position = files.firstIndex(where: { $0.start == entry.start }) else {
                        // Acknowledged and released meanwhile: the next start removes its copy.
                        released += [entry.data, entry.index]
                        continue
                    }
                    retired += [files[position].data, files[position].index]
                    files[position].data = entry.data
                    files[position].index = entry.index
                }
                return (retired, released)
            }
            for descriptor in released { SystemCall.close(descriptor) }
            descriptors.withLock { descriptors in
                descriptors.retired += retired + [previous.marks, previous.lock]
                descriptors.lock = lock
            }
            directoryState.withLock {
                $0.isGone = false
                $0.identity = identity
            }
        } catch {
            for entry in moved {
                SystemCall.close(entry.data)
                SystemCall.close(entry.index)
            }
            SystemCall.close(lock)
            throw error
        }
    }

    /// Copies the first `count` bytes of `source` to `destination`.
    private static func copy(_ count: Int, from source: CInt, to destination: CInt, path: String) throws(StreamUpError) {
        var done = 0
        while done < count {
            let piece = min(SpoolIndexEntry.maxLength, count - done)
            let bytes = try SystemCall.readAll(source, count: piece, at: done, "cannot read a held spool file")
            guard !bytes.isEmpty else { throw StreamUpError(.io, "a held spool file ended early") }
            try SystemCall.writeAll(destination, bytes, at: done, "cannot write \(path)")
            done += bytes.count
        }
    }
}

/// Where a spool directory is: a deleted or replaced one has another (or no) identity.
struct DirectoryIdentity: Equatable {
    var device: UInt64
    var inode: UInt64
}
