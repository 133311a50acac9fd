#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The entries of one directory, read with `opendir(3)` and `readdir(3)`: each name (without
/// `.` and `..`), its inode number and what `d_type` says it is.
///
/// Names that are not valid UTF-8 are left out: a path the follower cannot spell as a
/// `String` cannot be opened by it either.
///
/// Thread safety: stateless; callable from any thread.
package enum DirectoryListing {
    /// One entry of a directory.
    ///
    /// Thread safety: a value type.
    package struct Entry: Equatable, Sendable {
        package let name: String
        package let inode: UInt64
        package let kind: Kind
    }

    /// What `d_type` says an entry is; `.unknown` on file systems that do not fill it in (then
    /// `stat(2)` tells).
    ///
    /// Thread safety: a value type.
    package enum Kind: Equatable, Sendable {
        case directory, regularFile, symbolicLink, other, unknown
    }

    /// The entries of `directory`; nil when it does not exist (ENOENT, ENOTDIR).
    /// - Throws: `failure` (with the errno) when it cannot be read (EACCES, …).
    package static func entries<Failure: SystemCallFailure>(
        of directory: String, throwing failure: Failure.Type
    ) throws(Failure) -> [Entry]? {
        guard let stream = opendir(directory) else {
            let code = SystemCall<Failure>.errno
            if code == ENOENT || code == ENOTDIR { return nil }
            throw Failure(systemCall: SystemCallError("cannot list \(directory)", errno: code))
        }
        defer { closedir(stream) }
        var entries: [Entry] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(validating: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let name, name != ".", name != ".." else { continue }
            entries.append(Entry(name: name, inode: UInt64(entry.pointee.d_ino), kind: kind(of: entry.pointee.d_type)))
        }
        return entries
    }

    /// `directory` joined with `name` (no doubled slash after `/`).
    package static func path(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    private static func kind(of type: UInt8) -> Kind {
        switch Int32(type) {
        case Int32(DT_DIR): .directory
        case Int32(DT_REG): .regularFile
        case Int32(DT_LNK): .symbolicLink
        case Int32(DT_UNKNOWN): .unknown
        default: .other
        }
    }
}
