#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one place the sink calls into POSIX.
///
/// Every wrapper in `POSIX/` hands its raw C call to ``run(_:_:)``, which
/// - retries the call while it fails with `EINTR`,
/// - returns ``Outcome/wouldBlock`` (a value, not an error) for `EAGAIN`/`EWOULDBLOCK`,
///   which on a socket with `SO_RCVTIMEO`/`SO_SNDTIMEO` also means "timed out",
/// - traps on `EBADF` and `EFAULT`, which can only mean a bug in the sink,
/// - throws ``SinkError`` with the errno and the C function's name for everything else.
///
/// The call is passed as a closure, so tests can hand in a fake that sets `errno` and
/// fails, and thereby drive every errno path without a real socket.
///
/// Thread safety: stateless; callable from any thread (`errno` is thread-local).
enum Syscall {
    /// The result of a call that did not throw.
    enum Outcome<Value: Equatable>: Equatable {
        case done(Value)
        case wouldBlock
    }

    /// Runs `call` until it does not fail with `EINTR` and classifies the result.
    ///
    /// - Parameters:
    ///   - function: the C function's name, used in the error.
    ///   - call: performs the C call and returns its raw result; `-1` (or any negative value)
    ///     means failure with `errno` set.
    @inline(__always)
    static func run<Value: FixedWidthInteger>(
        _ function: StaticString,
        _ call: () -> Value
    ) throws(SinkError) -> Outcome<Value> {
        while true {
            let result = call()
            if result >= 0 {
                return .done(result)
            }
            let code = currentErrno()
            switch code {
            case EINTR:
                continue
            case EAGAIN, EWOULDBLOCK:
                return .wouldBlock
            case EBADF, EFAULT:
                preconditionFailure("\(function) failed with errno \(code): a bug in StreamUpSink")
            default:
                throw SinkError.systemCall("\(function)", errno: code)
            }
        }
    }

    /// Like ``run(_:_:)`` for calls where "would block" cannot happen (or is itself a failure):
    /// `EAGAIN` is thrown like any other errno.
    @inline(__always)
    static func runBlocking<Value: FixedWidthInteger>(
        _ function: StaticString,
        _ call: () -> Value
    ) throws(SinkError) -> Value {
        switch try run(function, call) {
        case .done(let value):
            return value
        case .wouldBlock:
            throw SinkError.systemCall("\(function)", errno: EAGAIN)
        }
    }

    @inline(__always)
    static func currentErrno() -> Int32 {
        #if canImport(Glibc)
        return Glibc.errno
        #else
        return Darwin.errno
        #endif
    }

    /// Sets `errno`; for fakes in tests.
    static func setErrno(_ value: Int32) {
        #if canImport(Glibc)
        Glibc.errno = value
        #else
        Darwin.errno = value
        #endif
    }
}
