#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The two system calls a write needs, so tests can force interrupted, short and failed writes.
///
/// Thread safety: immutable; the closures are called from any thread.
struct DescriptorWriter: Sendable {
    /// `write(2)`: bytes written, or -1 with the errno.
    let write: @Sendable (_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> (count: Int, errno: Int32)
    /// Waits with `poll(2)` until `fd` can take bytes (for a descriptor that is non-blocking).
    let waitWritable: @Sendable (_ fd: Int32) -> Void

    static let system = DescriptorWriter(
        write: { fd, bytes in
            #if canImport(Glibc)
            let count = Glibc.write(fd, bytes.baseAddress, bytes.count)
            #else
            let count = Darwin.write(fd, bytes.baseAddress, bytes.count)
            #endif
            return (count, count < 0 ? errno : 0)
        },
        waitWritable: { fd in
            var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = poll(&descriptor, 1, -1)
        })

    /// Writes every byte of `bytes` to `fd`: retries EINTR, continues after a partial write,
    /// waits out EAGAIN. Returns nil when all were written, else the errno that stopped it.
    func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let (count, error) = write(fd, UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            if count >= 0 {
                offset += count
                continue
            }
            switch error {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: waitWritable(fd)
            default: return error
            }
        }
        return nil
    }
}
