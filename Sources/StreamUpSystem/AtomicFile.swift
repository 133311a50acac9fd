#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Small files written so that readers see either the old or the new contents, never a mix, even
/// across a crash.
///
/// ``replace(at:with:throwing:)`` writes a temporary file in the same directory (`open(2)` with
/// `O_EXCL`), then `fsync(2)`s it, `rename(2)`s it over the target, and `fsync(2)`s the
/// directory so the rename itself is durable. On failure the temporary file is removed.
///
/// Thread safety: stateless; callable from any thread (concurrent writers to one path each
/// use their own temporary file; the last rename wins).
package enum AtomicFile {
    /// Replaces the file at `path` with `bytes`, atomically and durably.
    /// - Throws: `failure`, saying which step failed on which file.
    package static func replace<Failure: SystemCallFailure>(
        at path: String, with bytes: [UInt8], throwing failure: Failure.Type
    ) throws(Failure) {
        typealias Call = SystemCall<Failure>
        let components = PathComponents(path)
        let separator = components.directory.hasSuffix("/") ? "" : "/"
        let temporary =
            components.directory + separator
            + ".\(components.name).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let fd = try Call.runBlocking("create \(temporary) failed") {
            Call.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o600)
        }
        do {
            defer { Call.close(fd) }
            // Only the owner reads what streamup keeps (positions, spool records), whatever the umask.
            try Call.runBlocking("chmod \(temporary) failed") { fchmod(fd, 0o600) }
            try Call.writeAll(fd, bytes, at: 0, "write \(temporary) failed")
            try Call.runBlocking("fsync \(temporary) failed") { fsync(fd) }
            try Call.runBlocking("rename \(temporary) to \(path) failed") { rename(temporary, path) }
        } catch {
            unlink(temporary)
            throw error
        }
        syncDirectory(components.directory)
    }

    /// Removes the temporary files that writers killed inside ``replace(at:with:throwing:)``
    /// (`kill -9`, a crash) left beside `path`: `.NAME.PID.RANDOM.tmp`, each as large as one
    /// version of the file, never removed otherwise. Best effort. Call it only while this
    /// process is the file's one writer (holding its lock): another writer's file would go too.
    package static func removeLeftovers(of path: String) {
        let components = PathComponents(path)
        let prefix = "." + components.name + "."
        let names = (try? DirectoryListing.entries(of: components.directory, throwing: SystemCallError.self)) ?? nil
        for entry in names ?? [] where isLeftover(entry.name, prefix: prefix) {
            unlink(DirectoryListing.path(components.directory, entry.name))
        }
    }

    /// Whether `name` is `prefix` then `PID.RANDOM.tmp` (two runs of ASCII digits), as
    /// ``replace(at:with:throwing:)`` names its temporary files.
    private static func isLeftover(_ name: String, prefix: String) -> Bool {
        guard name.hasPrefix(prefix), name.hasSuffix(".tmp") else { return false }
        let numbers = name.dropFirst(prefix.count).dropLast(".tmp".count)
        let parts = numbers.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 2 && parts.allSatisfy { part in !part.isEmpty && part.utf8.allSatisfy { (0x30...0x39).contains($0) } }
    }

    /// The whole contents of the file at `path`; nil when there is no file (ENOENT).
    /// - Throws: `failure`, saying which step failed on which file.
    package static func contents<Failure: SystemCallFailure>(
        at path: String, throwing failure: Failure.Type
    ) throws(Failure) -> [UInt8]? {
        typealias Call = SystemCall<Failure>
        let fd = Call.retryingInterrupts { Call.open(path, O_RDONLY | O_CLOEXEC) }
        if fd < 0 {
            let code = Call.errno
            if code == ENOENT { return nil }
            throw Failure(systemCall: SystemCallError("open \(path) failed", errno: code))
        }
        defer { Call.close(fd) }
        var contents: [UInt8] = []
        while true {
            let chunk = try Call.readAll(fd, count: 4096, at: contents.count, "read \(path) failed")
            contents += chunk
            if chunk.count < 4096 { return contents }
        }
    }

    /// Makes a rename in `directory` durable; best effort (some file systems refuse `fsync` on a
    /// directory).
    private static func syncDirectory(_ directory: String) {
        typealias Call = SystemCall<SystemCallError>
        let fd = Call.retryingInterrupts { Call.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { return }
        _ = fsync(fd)
        Call.close(fd)
    }
}
