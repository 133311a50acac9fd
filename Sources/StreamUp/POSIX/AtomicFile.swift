#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Small files written so that readers see either the old or the new contents, never a mix, even
/// across a crash.
///
/// ``replace(at:with:)`` writes a temporary file in the same directory (`open(2)` with `O_EXCL`), then
/// `fsync(2)`s it, `rename(2)`s it over the target, and `fsync(2)`s the directory so the rename
/// itself is durable. On failure the temporary file is removed.
///
/// Thread safety: stateless; callable from any thread (concurrent writers to one path each
/// use their own temporary file; the last rename wins).
enum AtomicFile {
    /// Replaces the file at `path` with `bytes`, atomically and durably.
    /// - Throws: ``StreamUpError`` (`.io`).
    static func replace(at path: String, with bytes: [UInt8]) throws {
        let components = PathComponents(path)
        let separator = components.directory.hasSuffix("/") ? "" : "/"
        let temporary = components.directory + separator
            + ".\(components.name).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let fd = SystemCall.retryingInterrupts {
            open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(0o644))
        }
        if fd < 0 { throw StreamUpError(.io, "create \(temporary) failed", errno: errno) }
        do {
            defer { SystemCall.close(fd) }
            try bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = try SystemCall.runBlocking("write \(temporary) failed") {
                        write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                    }
                    offset += written
                }
            }
            try SystemCall.runBlocking("fsync \(temporary) failed") { fsync(fd) }
        } catch {
            unlink(temporary)
            throw error
        }
        if SystemCall.retryingInterrupts({ rename(temporary, path) }) != 0 {
            let failure = errno
            unlink(temporary)
            throw StreamUpError(.io, "rename \(temporary) to \(path) failed", errno: failure)
        }
        syncDirectory(components.directory)
    }

    /// The whole contents of the file at `path`; nil when there is no file (ENOENT).
    /// - Throws: ``StreamUpError`` (`.io`).
    static func contents(at path: String) throws -> [UInt8]? {
        let fd = SystemCall.retryingInterrupts { open(path, O_RDONLY | O_CLOEXEC) }
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw StreamUpError(.io, "open \(path) failed", errno: errno)
        }
        defer { SystemCall.close(fd) }
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = try chunk.withUnsafeMutableBytes { buffer in
                try SystemCall.runBlocking("read \(path) failed") { read(fd, buffer.baseAddress, buffer.count) }
            }
            if count == 0 { return contents }
            contents += chunk[..<count]
        }
    }

    /// Makes a rename in `directory` durable; best effort (some file systems refuse `fsync` on a
    /// directory).
    private static func syncDirectory(_ directory: String) {
        let fd = SystemCall.retryingInterrupts { open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { return }
        _ = fsync(fd)
        SystemCall.close(fd)
    }
}
