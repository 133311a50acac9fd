import StreamUp
import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Finds where a followed file went when it was rotated while nobody followed it: a file in the
/// same directory with the saved identity (``path(of:near:)``); and the files that may be
/// copies of it (``rotatedNames(of:)``).
///
/// ``path(of:near:)`` tries `<path>.1` first (logrotate's and most tools' first rotated name), then scans the
/// directory (``DirectoryListing``) for an entry with the saved inode, and confirms the
/// device with `stat(2)`. A rotated file that was compressed or moved to another directory is
/// not found.
///
/// Thread safety: stateless; callable from any thread.
enum RotatedFileLookup {
    /// The path of the file in `path`'s directory whose identity is `identity`, if there is one.
    static func path(of identity: FileIdentity, near path: String) -> String? {
        let firstRotation = path + ".1"
        if (try? FileStatus.of(path: firstRotation, throwing: StreamUpError.self))??.identity == identity { return firstRotation }

        let directory = PathComponents(path).directory
        guard let entries = try? DirectoryListing.entries(of: directory, throwing: StreamUpError.self) else { return nil }
        for entry in entries where entry.inode == identity.inode {
            let candidate = DirectoryListing.path(directory, entry.name)
            if (try? FileStatus.of(path: candidate, throwing: StreamUpError.self))??.identity == identity { return candidate }
        }
        return nil
    }

    /// The regular files in `path`'s directory named like rotated copies of it (`NAME.1`,
    /// `NAME-20261125`, `NAME.old`, `NAME_1`: its name, then `.`, `-` or `_`), most recently
    /// modified first: where copytruncate's copy of it is.
    static func rotatedNames(of path: String) -> [String] {
        rotatedFiles(of: path).map(\.path)
    }

    /// When `file` was last written (nil if `fstat` fails).
    static func lastWrite(of file: ReadOnlyFile) -> timespec? {
        var info = stat()
        return fstat(file.descriptor, &info) == 0 ? info.st_mtim : nil
    }

    /// The files among `path`'s rotated names (``rotatedNames(of:)``) last written at `since`
    /// or later, oldest first, compressed ones (`.gz`, `.bz2`, `.xz`, `.zst`, `.lz4`, `.zip`)
    /// left out: beside a rotated file, the ones made at its name after it.
    static func rotatedFiles(of path: String, writtenSince since: timespec) -> [(path: String, identity: FileIdentity)] {
        let compressed = [".gz", ".bz2", ".xz", ".zst", ".lz4", ".zip"]
        return rotatedFiles(of: path)
            .filter { !isEarlier($0.modified, than: since) && !compressed.contains(where: $0.path.hasSuffix) }
            .reversed().map { (path: $0.path, identity: $0.identity) }
    }

    /// The regular files named like rotated copies of `path`, most recently modified first.
    private static func rotatedFiles(of path: String) -> [(path: String, identity: FileIdentity, modified: timespec)] {
        let components = PathComponents(path)
        guard let entries = try? DirectoryListing.entries(of: components.directory, throwing: StreamUpError.self) else { return [] }
        var found: [(path: String, identity: FileIdentity, modified: timespec)] = []
        for entry in entries where entry.name.count > components.name.count && entry.name.hasPrefix(components.name) {
            let separator = entry.name[entry.name.index(entry.name.startIndex, offsetBy: components.name.count)]
            guard separator == "." || separator == "-" || separator == "_" else { continue }
            let candidate = DirectoryListing.path(components.directory, entry.name)
            var info = stat()
            guard stat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            found.append((candidate, FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)), info.st_mtim))
        }
        return found.sorted { isEarlier($1.modified, than: $0.modified) }
    }

    static func isEarlier(_ time: timespec, than other: timespec) -> Bool {
        (time.tv_sec, time.tv_nsec) < (other.tv_sec, other.tv_nsec)
    }
}
