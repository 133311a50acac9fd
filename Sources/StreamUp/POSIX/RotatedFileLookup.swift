#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Finds where a followed file went when it was rotated while nobody followed it: a file in the
/// same directory with the saved identity.
///
/// It tries `<path>.1` first (logrotate's and most tools' first rotated name), then scans the
/// directory (`opendir(3)`, `readdir(3)`) for an entry with the saved inode, and confirms the
/// device with `stat(2)`. A rotated file that was compressed or moved to another directory is
/// not found.
///
/// Thread safety: stateless; callable from any thread.
enum RotatedFileLookup {
    /// The path of the file in `path`'s directory whose identity is `identity`, if there is one.
    static func path(of identity: FileIdentity, near path: String) -> String? {
        let firstRotation = path + ".1"
        if (try? FileStatus.of(path: firstRotation))??.identity == identity { return firstRotation }

        let directory = PathComponents(path).directory
        guard let stream = opendir(directory) else { return nil }
        defer { closedir(stream) }
        while let entry = readdir(stream) {
            guard UInt64(entry.pointee.d_ino) == identity.inode else { continue }
            let entryName = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard entryName != "." && entryName != ".." else { continue }
            let candidate = directory == "/" ? "/" + entryName : directory + "/" + entryName
            if (try? FileStatus.of(path: candidate))??.identity == identity { return candidate }
        }
        return nil
    }
}
