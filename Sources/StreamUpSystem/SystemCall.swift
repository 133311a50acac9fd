#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one place the package calls into POSIX, with swift-nio's rules
/// (`Sources/NIOPosix/System.swift`):
/// - a call that fails with `EINTR` is run again;
/// - `EAGAIN`/`EWOULDBLOCK` is ``Outcome/wouldBlock`` from ``run(_:_:)`` (a value, not an error:
///   a non-blocking descriptor has nothing now, and a socket with `SO_RCVTIMEO`/`SO_SNDTIMEO`
///   timed out); ``runBlocking(_:_:)`` throws it like any other errno;
/// - `EBADF` and `EFAULT` trap: they can only mean a bug (a closed or reused descriptor, a bad
///   pointer) and going on would read or write someone else's file;
/// - any other errno is thrown as `Failure`, made from the errno and the operation's name.
///
/// Generic over the error each module throws: the sink uses `SystemCall<SinkError>`, the
/// library `SystemCall<StreamUpError>`, tests and tools ``SystemCallError`` itself. Each module
/// names its own with a `typealias`, so the rules above live here once.
///
/// The call is a closure, so tests can hand in a fake that sets `errno` and fails and thereby
/// drive every errno path without a real descriptor.
///
/// Thread safety: stateless; callable from any thread (`errno` is thread-local).
package enum SystemCall<Failure: SystemCallFailure> {
    /// The result of a call that did not throw.
    ///
    /// Thread safety: a value type.
    package enum Outcome<Value: Equatable & Sendable>: Equatable, Sendable {
        case done(Value)
        case wouldBlock
    }

    /// Runs `call` until it does not fail with `EINTR` and classifies the result.
    ///
    /// - Parameters:
    ///   - operation: the C function's name, or what was being done; used in the error (and
    ///     in the trap message). Evaluated only on failure.
    ///   - call: performs the C call and returns its raw result; a negative value means failure
    ///     with `errno` set.
    @inline(__always)
    package static func run<Value: FixedWidthInteger & Sendable>(
        _ operation: @autoclosure () -> String,
        _ call: () -> Value
    ) throws(Failure) -> Outcome<Value> {
        while true {
            let result = call()
            if result >= 0 { return .done(result) }
            let code = errno
            switch code {
            case EINTR:
                continue
            case EAGAIN, EWOULDBLOCK:
                return .wouldBlock
            case EBADF, EFAULT:
                preconditionFailure("\(operation()) failed with errno \(code): a bug in streamup")
            default:
                throw Failure(systemCall: SystemCallError(operation(), errno: code))
            }
        }
    }

    /// Like ``run(_:_:)`` for calls where "would block" cannot happen or is itself a failure:
    /// `EAGAIN` is thrown like any other errno.
    @discardableResult @inline(__always)
    package static func runBlocking<Value: FixedWidthInteger & Sendable>(
        _ operation: @autoclosure () -> String,
        _ call: () -> Value
    ) throws(Failure) -> Value {
        switch try run(operation(), call) {
        case .done(let value):
            return value
        case .wouldBlock:
            throw Failure(systemCall: SystemCallError(operation(), errno: EAGAIN))
        }
    }

    /// Runs `call` until it does not fail with `EINTR`; returns its raw result (negative with
    /// `errno` set on failure). For calls whose failure is an expected answer the caller reads
    /// from `errno` (ENOENT for a file that is not there yet).
    @inline(__always)
    package static func retryingInterrupts<Value: BinaryInteger>(_ call: () -> Value) -> Value {
        while true {
            let result = call()
            if result >= 0 || errno != EINTR { return result }
        }
    }

    /// Writes all of `bytes` at `offset` of `fd` with `pwrite(2)`, through ``runBlocking(_:_:)``
    /// (short writes continue where they stopped).
    package static func writeAll(
        _ fd: CInt, _ bytes: [UInt8], at offset: Int, _ operation: @autoclosure () -> String
    ) throws(Failure) {
        var done = 0
        while done < bytes.count {
            // withUnsafeBytes rethrows untyped errors: carry the typed one out in a Result.
            let step = bytes.withUnsafeBytes { raw in
                Result { () throws(Failure) in
                    try runBlocking(operation(), { pwrite(fd, raw.baseAddress! + done, raw.count - done, off_t(offset + done)) })
                }
            }
            done += try step.get()
        }
    }

    /// Writes all of `bytes` to `fd` at its file position with `write(2)`, through
    /// ``runBlocking(_:_:)`` (short writes continue where they stopped).
    package static func writeAll(
        _ fd: CInt, _ bytes: UnsafeRawBufferPointer, _ operation: @autoclosure () -> String
    ) throws(Failure) {
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            done += try runBlocking(operation(), { write(fd, base + done, bytes.count - done) })
        }
    }

    /// Reads `count` bytes at `offset` of `fd` with `pread(2)`, through ``runBlocking(_:_:)``;
    /// fewer at the end of the file.
    package static func readAll(
        _ fd: CInt, count: Int, at offset: Int, _ operation: @autoclosure () -> String
    ) throws(Failure) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let step = bytes.withUnsafeMutableBytes { raw in
                Result { () throws(Failure) in
                    try runBlocking(operation(), { pread(fd, raw.baseAddress! + done, raw.count - done, off_t(offset + done)) })
                }
            }
            let read = try step.get()
            if read == 0 { break }
            done += read
        }
        bytes.removeLast(count - done)
        return bytes
    }

    /// `open(2)` with a mode (for `O_CREAT`); -1 with `errno` set on failure. Not retried: pass
    /// it to ``runBlocking(_:_:)`` or ``retryingInterrupts(_:)``.
    package static func open(_ path: String, _ flags: CInt, mode: mode_t = 0o644) -> CInt {
        #if canImport(Glibc)
        Glibc.open(path, flags, mode)
        #else
        Darwin.open(path, flags, mode)
        #endif
    }

    /// `close(2)`; the descriptor is gone afterwards whatever it returns (EINTR included), so it
    /// is never retried.
    package static func close(_ fd: CInt) {
        #if canImport(Glibc)
        _ = Glibc.close(fd)
        #else
        _ = Darwin.close(fd)
        #endif
    }

    /// The calling thread's `errno`.
    package static var errno: CInt {
        get {
            #if canImport(Glibc)
            Glibc.errno
            #else
            Darwin.errno
            #endif
        }
        set {
            #if canImport(Glibc)
            Glibc.errno = newValue
            #else
            Darwin.errno = newValue
            #endif
        }
    }
}
