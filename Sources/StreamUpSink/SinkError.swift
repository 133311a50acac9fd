/// The one error type the sink throws.
///
/// Branch on ``code``; ``errno`` carries the operating-system error when a system call failed,
/// and ``description`` names the C function (or the step) that failed. A malformed request from a
/// client is *not* an error of this type: the server answers it with a 4xx status and reports it as
/// a ``SinkRequestEvent``.
///
/// Thread safety: a value type that is never shared mutably; safe to send anywhere.
public struct SinkError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is. Extensible: compare with `==` rather than switching.
    ///
    /// Thread safety: a value type; safe to send anywhere.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        enum Kind: Sendable, Hashable {
            case systemCall
            case invalidAddress
            case invalidConfiguration
            case storage
            case notRunning
        }

        let kind: Kind

        /// A system call failed; ``SinkError/errno`` holds the reason.
        public static let systemCall = Code(kind: .systemCall)
        /// The configured host could not be resolved to a local address.
        public static let invalidAddress = Code(kind: .invalidAddress)
        /// A ``SinkConfiguration`` value is out of range.
        public static let invalidConfiguration = Code(kind: .invalidConfiguration)
        /// A body file could not be created, written or renamed.
        public static let storage = Code(kind: .storage)
        /// The server was already stopped.
        public static let notRunning = Code(kind: .notRunning)

        public var description: String {
            switch kind {
            case .systemCall: "system call failed"
            case .invalidAddress: "invalid address"
            case .invalidConfiguration: "invalid configuration"
            case .storage: "storage failed"
            case .notRunning: "not running"
            }
        }
    }

    /// What kind of failure this is.
    public let code: Code
    /// The `errno` value reported by the failing call, if any.
    public let errno: Int32?
    /// The C function or step that failed, for example `"bind"` or `"open"`.
    public let operation: String
    private let detail: String?

    init(_ code: Code, operation: String, errno: Int32? = nil, detail: String? = nil) {
        self.code = code
        self.operation = operation
        self.errno = errno
        self.detail = detail
    }

    /// A failed system call: `function` is the C function's name.
    static func systemCall(_ function: String, errno: Int32) -> SinkError {
        SinkError(.systemCall, operation: function, errno: errno)
    }

    public var description: String {
        var text = "\(operation): \(code)"
        if let errno {
            text += " (errno \(errno): \(SinkError.message(forErrno: errno)))"
        }
        if let detail {
            text += ": \(detail)"
        }
        return text
    }

    static func message(forErrno value: Int32) -> String {
        guard let cString = strerror(value) else { return "unknown error" }
        return String(cString: cString)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
