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
            let name = String(validating: Self.name(of: entry), as: UTF8.self)
            guard let name, name != ".", name != ".." else { continue }
            let inode = UnsafeRawPointer(entry).load(fromByteOffset: inodeOffset, as: ino_t.self)
            let type = UnsafeRawPointer(entry).load(fromByteOffset: typeOffset, as: UInt8.self)
            entries.append(Entry(name: name, inode: UInt64(inode), kind: kind(of: type)))
        }
        return entries
    }

    /// The bytes of an entry's name, read where the entry is: `readdir(3)` packs entries as long
    /// as their names, so a copy of the whole `dirent` (`entry.pointee`) can read past the
    /// last one into an unmapped page (it did, in `/proc/self/fd` with 5,000 entries).
    package static func name(of entry: UnsafeMutablePointer<dirent>) -> UnsafeBufferPointer<UInt8> {
        let start = UnsafeRawPointer(entry).advanced(by: nameOffset).assumingMemoryBound(to: UInt8.self)
        return UnsafeBufferPointer(start: start, count: strlen(UnsafeRawPointer(start).assumingMemoryBound(to: CChar.self)))
    }

    private static let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name) ?? 0
    private static let inodeOffset = MemoryLayout<dirent>.offset(of: \dirent.d_ino) ?? 0
    private static let typeOffset = MemoryLayout<dirent>.offset(of: \dirent.d_type) ?? 0

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
