#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the file tailer needs from `stat(2)`/`fstat(2)`: identity, size, and whether it is a
/// regular file or a directory.
///
/// Thread safety: a value type that is never shared.
package struct FileStatus: Sendable, Equatable {
    package let identity: FileIdentity
    package let size: Int64
    package let isRegularFile: Bool
    package let isDirectory: Bool

    package init(_ info: stat) {
        identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        size = Int64(info.st_size)
        isRegularFile = (info.st_mode & S_IFMT) == S_IFREG
        isDirectory = (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// `stat(2)` of `path` (following symlinks); nil when nothing is there (ENOENT, ENOTDIR).
    package static func of<Failure: SystemCallFailure>(
        path: String, throwing failure: Failure.Type
    ) throws(Failure) -> FileStatus? {
        var info = stat()
        let result = SystemCall<Failure>.retryingInterrupts { stat(path, &info) }
        if result == 0 { return FileStatus(info) }
        let code = SystemCall<Failure>.errno
        if code == ENOENT || code == ENOTDIR { return nil }
        throw Failure(systemCall: SystemCallError("stat \(path) failed", errno: code))
    }

    /// `fstat(2)` of an open descriptor.
    package static func of<Failure: SystemCallFailure>(
        descriptor: CInt, throwing failure: Failure.Type
    ) throws(Failure) -> FileStatus {
        var info = stat()
        try SystemCall<Failure>.runBlocking("fstat of descriptor \(descriptor) failed") { fstat(descriptor, &info) }
        return FileStatus(info)
    }
}
