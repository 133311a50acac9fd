#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One body being written to disk: created as `NAME.partial`, renamed to `NAME.body` only when
/// the whole body arrived. An incomplete body keeps its `.partial` name, so a cut-off stream
/// can still be inspected and is never mistaken for a complete one.
///
/// Owns its file descriptor (`open(2)` with `O_CREAT | O_EXCL | O_NOFOLLOW`: an existing file or
/// a symbolic link planted under the name is refused, never overwritten or followed) and closes
/// it in ``complete()`` or ``abandon()``; `deinit` asserts that one of them ran. A resumable
/// upload abandons its file whenever no request is appending and ``reopen(expectedLength:)``s it
/// for the next append, so an idle upload holds no descriptor.
///
/// Thread safety: not Sendable; confined to the connection thread that created it.
final class BodyFile {
    let partialPath: String
    let completePath: String
    private var descriptor: CInt

    /// Creates `directory/baseName.partial`; fails if it already exists.
    init(directory: String, baseName: String) throws(SinkError) {
        partialPath = "\(directory)/\(baseName).partial"
        completePath = "\(directory)/\(baseName).body"
        let path = partialPath
        do {
            descriptor = try SystemCall.runBlocking("open") {
                open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
            }
        } catch {
            throw SinkError(.storage, operation: "open", errno: error.errno, detail: path)
        }
    }

    deinit {
        assert(descriptor < 0, "BodyFile \(partialPath) was dropped while open")
        if descriptor >= 0 {
            _ = close(descriptor)
        }
    }

    /// Whether the descriptor is open (from creation or ``reopen(expectedLength:)`` until
    /// ``abandon()`` or ``complete()``).
    var isOpen: Bool {
        descriptor >= 0
    }

    /// Opens the `.partial` file again for appending (`open(2)` with `O_APPEND | O_NOFOLLOW`,
    /// `lseek(2)`); fails, leaving it closed, unless it holds exactly `expectedLength` bytes.
    func reopen(expectedLength: Int) throws(SinkError) {
        precondition(descriptor < 0, "reopen while open")
        let path = partialPath
        let fd: CInt
        do {
            fd = try SystemCall.runBlocking("open") { open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC) }
        } catch {
            throw SinkError(.storage, operation: "open", errno: error.errno, detail: path)
        }
        let length: Int
        do {
            length = Int(try SystemCall.runBlocking("lseek") { lseek(fd, 0, SEEK_END) })
        } catch {
            _ = close(fd)
            throw SinkError(.storage, operation: "lseek", errno: error.errno, detail: path)
        }
        guard length == expectedLength else {
            _ = close(fd)
            throw SinkError(
                .storage, operation: "open",
                detail: "\(path) holds \(length) bytes, the upload \(expectedLength): it was changed behind the sink's back")
        }
        descriptor = fd
    }

    /// Appends `bytes` (`write(2)`, looping over short writes).
    func write(_ bytes: UnsafeRawBufferPointer) throws(SinkError) {
        precondition(descriptor >= 0, "write after close")
        var offset = 0
        while offset < bytes.count {
            let base = bytes.baseAddress! + offset
            let count = bytes.count - offset
            let fd = descriptor
            do {
                offset += try SystemCall.runBlocking("write") { systemWrite(fd, base, count) }
            } catch {
                throw SinkError(.storage, operation: "write", errno: error.errno, detail: partialPath)
            }
        }
    }

    /// Closes the file and renames it to its `.body` name (`rename(2)`); returns that path.
    func complete() throws(SinkError) -> String {
        closeDescriptor()
        let from = partialPath
        let to = completePath
        do {
            _ = try SystemCall.runBlocking("rename") { rename(from, to) }
        } catch {
            throw SinkError(.storage, operation: "rename", errno: error.errno, detail: to)
        }
        return completePath
    }

    /// Closes the file and leaves it under its `.partial` name; returns that path.
    func abandon() -> String {
        closeDescriptor()
        return partialPath
    }

    private func closeDescriptor() {
        guard descriptor >= 0 else { return }
        _ = close(descriptor)
        descriptor = -1
    }
}

@available(*, unavailable)
extension BodyFile: Sendable {}

@inline(__always) private func systemWrite(_ fd: CInt, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}
