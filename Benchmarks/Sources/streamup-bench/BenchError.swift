#if canImport(Glibc)
import Glibc
#endif

/// A benchmark step that could not run, with a message for the user.
///
/// Thread safety: an immutable value; safe to send anywhere.
struct BenchError: Error, CustomStringConvertible, Sendable {
    let description: String

    init(_ description: String) {
        self.description = description
    }

    /// `what` failed with the current `errno`.
    static func system(_ what: String, errno code: Int32 = errno) -> BenchError {
        BenchError("\(what): \(String(cString: strerror(code)))")
    }
}
