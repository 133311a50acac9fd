import Foundation
import StreamUpTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A full disk under `--spool`: the built binary on a spool in a file system of its own
/// (2 MiB of tmpfs), which a filler file fills and its removal frees again.
@Suite(.timeLimit(.minutes(2))) struct FullDiskTests {
    /// stdin through a spool whose disk fills up: streamup says once that it is full and waits,
    /// reading no more input; once space is freed it says once that it writes again, and every
    /// line arrives exactly once and in order, exit 0.
    @Test(.enabled(if: SmallFileSystem.isAvailable)) func aFullSpoolDiskMakesStdinWaitAndLosesNothing() async throws {
        let scratch = try TemporaryDirectory()
        let disk = try SmallFileSystem(at: scratch.file("disk"))
        defer { disk.unmount() }
        let spool = disk.path + "/spool"
        let filler = disk.path + "/filler"
        let lines = (1...1_500).map { String(format: "line %05d of a stream that waits for a disk\n", $0) }
        try await withSink { sink, directory in
            let child = try StreamupProcess(
                ["--spool", spool, "--spool-size", "512k", "--max-record", "64k", "--segment-seconds", "200ms", sink.url.absoluteString])
            try #require(await eventually { FileManager.default.fileExists(atPath: spool + "/stream.json") }, "stderr: \(child.stderr)")
            // Given a disk with no room left…
            disk.fill(with: filler)
            // …the lines read cannot be spooled: streamup says so once and reads no more.
            child.write(lines[..<1_000].joined())
            try #require(await eventually { child.stderr.contains("is full") }, "stderr: \(child.stderr)")
            #expect(streamText(in: directory) == nil, "nothing can have been spooled, so nothing sent")
            child.write(lines[1_000...].joined())
            // When the filler goes, it writes again and delivers all of it.
            try FileManager.default.removeItem(atPath: filler)
            #expect(await eventually { child.stderr.contains("writing again") }, "stderr: \(child.stderr)")
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(streamText(in: directory) == lines.joined(), "the lines arrived with a gap, twice, or out of order")
            let stderr = child.stderr.split(separator: "\n")
            #expect(stderr.filter { $0.contains("is full") }.count == 1, "stderr: \(child.stderr)")
            #expect(stderr.filter { $0.contains("writing again") }.count == 1, "stderr: \(child.stderr)")
        }
    }
}

/// A tmpfs of a few MiB mounted for one test, so that a test can fill a disk. Mounting needs
/// root and `mount`: without them the tests that need one are skipped with a line saying why,
/// except under CI (`CI` set), where they run (and fail) so a missing one is never silent.
///
/// Thread safety: immutable; `unmount` once, from the test that mounted it.
struct SmallFileSystem: Sendable {
    let path: String

    /// Whether such a file system can be mounted here; prints why not when it cannot.
    static var isAvailable: Bool {
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
    init(at path: String, size: String = "2m") throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let mounted = try ExternalTool.run(["mount", "-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", path])
        guard mounted.status == 0 else { throw CocoaError(.fileWriteNoPermission, userInfo: [NSLocalizedDescriptionKey: mounted.errorText]) }
        self.path = path
    }

    /// Writes `file` until the file system has no room left.
    func fill(with file: String) {
        _ = try? ExternalTool.run(["dd", "if=/dev/zero", "of=\(file)", "bs=4k"])
    }

    /// Unmounts it, even while a process still has a file open there (lazily).
    func unmount() {
        _ = try? ExternalTool.run(["umount", "-l", path])
    }
}
