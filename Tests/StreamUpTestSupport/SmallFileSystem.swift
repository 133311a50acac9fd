import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A tmpfs of a few MiB mounted for one test, so that a test can fill a disk. Mounting needs
/// root and `mount`: without them the tests that need one are skipped with a line saying why,
/// except under CI (`CI` set), where they run (and fail) so a missing one is never silent.
///
/// Thread safety: immutable; `unmount` once, from the test that mounted it.
public struct SmallFileSystem: Sendable {
    public let path: String

    /// Whether such a file system can be mounted here; prints why not when it cannot.
    public static var isAvailable: Bool {
        if ProcessInfo.processInfo.environment["CI"] != nil { return true }
        var missing: [String] = []
        if geteuid() != 0 { missing.append("root (mounting a tmpfs needs it)") }
        if (try? ExternalTool.run(["sh", "-c", "command -v mount && command -v umount"]).status) != 0 { missing.append("mount and umount") }
        guard missing.isEmpty else {
            print("skipping: a full disk is made with a small tmpfs, which needs \(missing.joined(separator: " and "))")
            return false
        }
        return true
    }

    /// Mounts a tmpfs of `size` at `path` (created).
    public init(at path: String, size: String = "2m") throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let mounted = try ExternalTool.run(["mount", "-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", path])
        guard mounted.status == 0 else { throw CocoaError(.fileWriteNoPermission, userInfo: [NSLocalizedDescriptionKey: mounted.errorText]) }
        self.path = path
    }

    /// Writes `file` until the file system has no room left.
    public func fill(with file: String) {
        _ = try? ExternalTool.run(["dd", "if=/dev/zero", "of=\(file)", "bs=4k"])
    }

    /// Unmounts it, even while a process still has a file open there (lazily).
    public func unmount() {
        _ = try? ExternalTool.run(["umount", "-l", path])
    }
}
