#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import StreamUpSystem

/// Finds where a followed file went when it was rotated while nobody followed it: a file in the
/// same directory with the saved identity.
///
/// It tries `<path>.1` first (logrotate's and most tools' first rotated name), then scans the
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
}
