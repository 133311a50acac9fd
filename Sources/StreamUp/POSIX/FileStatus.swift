#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which file a path or descriptor refers to: the device and inode from `stat(2)`.
///
/// Two names with the same identity are the same file; a rotated file keeps its identity under
/// its new name, a re-created one gets a new identity.
///
/// Thread safety: a value type that is never shared.
struct FileIdentity: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64
}

/// What the followers need from `stat(2)`/`fstat(2)`: identity, size, and whether it is a
/// regular file or a directory.
///
/// Thread safety: a value type that is never shared.
struct FileStatus: Sendable, Equatable {
    let identity: FileIdentity
    let size: Int64
    let isRegularFile: Bool
    let isDirectory: Bool

    init(_ info: stat) {
        identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        size = Int64(info.st_size)
        isRegularFile = (info.st_mode & S_IFMT) == S_IFREG
        isDirectory = (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// `stat(2)` of `path` (following symlinks); nil when nothing is there (ENOENT, ENOTDIR).
    static func of(path: String) throws(StreamUpError) -> FileStatus? {
        var info = stat()
        let result = SystemCall.retryingInterrupts { stat(path, &info) }
        if result == 0 { return FileStatus(info) }
        let failure = errno
        if failure == ENOENT || failure == ENOTDIR { return nil }
        throw StreamUpError(.io, "stat \(path) failed", errno: failure)
    }

    /// `fstat(2)` of an open descriptor.
    static func of(descriptor: CInt) throws(StreamUpError) -> FileStatus {
        var info = stat()
        try SystemCall.runBlocking("fstat of descriptor \(descriptor) failed") { fstat(descriptor, &info) }
        return FileStatus(info)
    }
}
