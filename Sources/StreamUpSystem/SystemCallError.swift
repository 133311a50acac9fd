#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call: what was called (or being done) and the errno it failed with. The
/// failure ``SystemCall`` funnels build their module's error from; thrown as is where no module
/// error applies (tests).
///
/// `description` is one line: `connect: Connection refused (errno 111)`.
///
/// Thread safety: a value type; safe to send anywhere.
package struct SystemCallError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The C function's name, or what was being done.
    package let operation: String
    /// The errno the call failed with.
    package let errno: CInt

    package init(_ operation: String, errno: CInt) {
        self.operation = operation
        self.errno = errno
    }

    package var description: String {
        "\(operation): \(Self.message(forErrno: errno)) (errno \(errno))"
    }

    /// `strerror(3)` of `value`.
    package static func message(forErrno value: CInt) -> String {
        guard let text = strerror(value) else { return "unknown error" }
        return String(cString: text)
    }
}

extension SystemCallError: SystemCallFailure {
    package init(systemCall failure: SystemCallError) {
        self = failure
    }
}
