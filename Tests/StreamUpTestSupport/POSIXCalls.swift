#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The POSIX spellings that differ between Glibc's Swift module and Darwin's, in one place, so
/// tests read the same on both: `SOCK_STREAM` (an enum in Glibc, an `Int32` in Darwin),
/// `MSG_NOSIGNAL` (Linux only: on Darwin a send passes no flag, and ``ignoreSIGPIPE()`` keeps a
/// vanished peer from killing the test runner), and the C functions a test names by module
/// (`Glibc.write`) because a method or helper of the same name is in scope.
///
/// Nothing here is compiled for Darwin in CI: the `#else` branches are written, not tested.
///
/// Thread safety: stateless; callable from any thread.
public enum POSIXCalls {
    /// `SOCK_STREAM` as `socket(2)` takes it.
    public static var streamSocket: CInt {
        #if canImport(Glibc)
        CInt(SOCK_STREAM.rawValue)
        #else
        SOCK_STREAM
        #endif
    }

    /// `MSG_NOSIGNAL` for `send(2)` on Linux; 0 elsewhere.
    public static var noSignal: CInt {
        #if canImport(Glibc)
        CInt(MSG_NOSIGNAL)
        #else
        0
        #endif
    }

    /// `write(2)`.
    public static func write(_ fd: CInt, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int {
        #if canImport(Glibc)
        Glibc.write(fd, bytes, count)
        #else
        Darwin.write(fd, bytes, count)
        #endif
    }

    /// `close(2)`.
    @discardableResult
    public static func close(_ fd: CInt) -> CInt {
        #if canImport(Glibc)
        Glibc.close(fd)
        #else
        Darwin.close(fd)
        #endif
    }

    /// `rename(2)`.
    public static func rename(_ from: String, _ to: String) -> CInt {
        #if canImport(Glibc)
        Glibc.rename(from, to)
        #else
        Darwin.rename(from, to)
        #endif
    }

    /// `truncate(2)`.
    public static func truncate(_ path: String, _ length: off_t) -> CInt {
        #if canImport(Glibc)
        Glibc.truncate(path, length)
        #else
        Darwin.truncate(path, length)
        #endif
    }

    /// Ignores SIGPIPE for the whole test process: a child or peer that goes away early must not
    /// kill the test runner.
    public static func ignoreSIGPIPE() {
        #if canImport(Glibc)
        _ = Glibc.signal(SIGPIPE, SIG_IGN)
        #else
        _ = Darwin.signal(SIGPIPE, SIG_IGN)
        #endif
    }
}
