#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A pipe (`pipe(2)`) used to wake the accept thread out of `poll(2)` when the server stops.
///
/// Owns both descriptors. ``signal()`` writes one byte; the accept thread polls ``readEnd``.
/// ``close()`` closes both ends exactly once; the server calls it only after the accept thread
/// has finished, so no one polls a closed (or reused) descriptor.
///
/// Thread safety: guarded by the `isClosed` mutex; callable from any thread.
final class WakePipe: Sendable {
    let readEnd: CInt
    private let writeEnd: CInt
    private let isClosed = Mutex(false)

    init() throws(SinkError) {
        var ends: [CInt] = [-1, -1]
        _ = try Syscall.runBlocking("pipe") { pipe(&ends) }
        readEnd = ends[0]
        writeEnd = ends[1]
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
    }

    deinit {
        close()
    }

    /// Makes ``readEnd`` readable (`write(2)` of one byte). Safe to call more than once. Cannot
    /// raise SIGPIPE: the read end is closed only by ``close()``, under the same lock.
    func signal() {
        isClosed.withLock { closed in
            guard !closed else { return }
            var byte: UInt8 = 1
            let fd = writeEnd
            _ = try? Syscall.run("write") { write(fd, &byte, 1) }
        }
    }

    /// Closes both ends; later calls do nothing.
    func close() {
        isClosed.withLock { closed in
            guard !closed else { return }
            closed = true
            _ = closeDescriptor(readEnd)
            _ = closeDescriptor(writeEnd)
        }
    }
}

@inline(__always) private func closeDescriptor(_ fd: CInt) -> CInt {
    #if canImport(Glibc)
    Glibc.close(fd)
    #else
    Darwin.close(fd)
    #endif
}
