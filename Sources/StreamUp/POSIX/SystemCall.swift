#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one place the file follower's POSIX wrappers run system calls.
///
/// ``retrying(_:_:)`` repeats a call that failed with EINTR and turns any other failure into a
/// ``StreamUpError`` with code `.io`, the errno, and what was being done. Calls whose failure is
/// an expected answer (ENOENT when a followed file is not there yet) use
/// ``retryingInterrupts(_:)`` and read `errno` themselves.
///
/// Thread safety: stateless; callable from any thread (`errno` is per thread).
enum SystemCall {
    /// Runs `call` until it does not fail with EINTR; returns its result, -1 with `errno` set
    /// on failure.
    @inline(__always)
    static func retryingInterrupts<Result: BinaryInteger>(_ call: () -> Result) -> Result {
        while true {
            let result = call()
            if result != -1 || errno != EINTR { return result }
        }
    }

    /// Runs `call` until it does not fail with EINTR; throws ``StreamUpError`` (`.io`) naming
    /// `context` on any other failure.
    @discardableResult @inline(__always)
    static func retrying<Result: BinaryInteger>(
        _ context: @autoclosure () -> String, _ call: () -> Result
    ) throws(StreamUpError) -> Result {
        let result = retryingInterrupts(call)
        if result == -1 { throw StreamUpError(.io, context(), errno: errno) }
        return result
    }

    /// `open(2)` with a mode (for `O_CREAT`); -1 with `errno` set on failure.
    static func open(_ path: String, _ flags: CInt, mode: mode_t = 0o644) -> CInt {
        #if canImport(Glibc)
        Glibc.open(path, flags, mode)
        #else
        Darwin.open(path, flags, mode)
        #endif
    }

    /// `close(2)`; the descriptor is gone afterwards whatever it returns (EINTR included), so
    /// it is never retried.
    static func close(_ fd: CInt) {
        #if canImport(Glibc)
        _ = Glibc.close(fd)
        #else
        _ = Darwin.close(fd)
        #endif
    }

    /// Writes all of `bytes` at `offset` of `fd` with `pwrite(2)` (retrying EINTR and short
    /// writes); throws ``StreamUpError`` (`.io`) naming `context` on failure.
    static func writeAll(_ fd: CInt, _ bytes: [UInt8], at offset: Int, _ context: @autoclosure () -> String) throws(StreamUpError) {
        var done = 0
        while done < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                retryingInterrupts { pwrite(fd, raw.baseAddress! + done, raw.count - done, off_t(offset + done)) }
            }
            if written < 0 { throw StreamUpError(.io, context(), errno: errno) }
            done += written
        }
    }

    /// Reads `count` bytes at `offset` of `fd` with `pread(2)` (fewer at the end of the file);
    /// throws ``StreamUpError`` (`.io`) naming `context` on failure.
    static func readAll(_ fd: CInt, count: Int, at offset: Int, _ context: @autoclosure () -> String) throws(StreamUpError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let read = bytes.withUnsafeMutableBytes { raw in
                retryingInterrupts { pread(fd, raw.baseAddress! + done, raw.count - done, off_t(offset + done)) }
            }
            if read < 0 { throw StreamUpError(.io, context(), errno: errno) }
            if read == 0 { break }
            done += read
        }
        bytes.removeLast(count - done)
        return bytes
    }
}
