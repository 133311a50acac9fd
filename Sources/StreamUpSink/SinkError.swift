/// The one error type the sink throws.
///
/// Branch on ``code``; ``errno`` carries the operating-system error when a system call failed,
/// and ``operation`` names the C function (or the step) that failed. ``description`` is one line
/// a person can act on: what happened, the call and its reason, and what to do about it where
/// the reason says, e.g. `cannot listen on 127.0.0.1:8080: bind: Address already in use (errno
/// 98); stop the program that uses the port, or pick another port (0 picks a free one)`.
/// A malformed request from a client is *not* an error of this type: the server answers it with
/// a 4xx status and reports it as a ``SinkRequestEvent``.
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
    /// What the sink was doing, when more telling than ``code`` (`cannot listen on HOST:PORT`).
    private let summary: String?

    init(_ code: Code, operation: String, errno: Int32? = nil, detail: String? = nil, summary: String? = nil) {
        self.code = code
        self.operation = operation
        self.errno = errno
        self.detail = detail
        self.summary = summary
    }

    /// A failed system call: `function` is the C function's name.
    static func systemCall(_ function: String, errno: Int32) -> SinkError {
        SinkError(.systemCall, operation: function, errno: errno)
    }

    /// The same error, said to have happened while doing `summary`.
    func happened(while summary: String) -> SinkError {
        SinkError(code, operation: operation, errno: errno, detail: detail, summary: summary)
    }

    /// One line: what happened, then ``details``.
    public var description: String {
        "\(summary ?? code.description): \(details)"
    }

    /// The call, its subject, the reason and the remedy, without what the sink was doing:
    /// `write: /out/00000001-POST.partial: No space left on device (errno 28); free some space…`.
    var details: String {
        var text = operation
        if let detail {
            text += ": \(detail)"
        }
        if let errno {
            text += ": \(SinkError.message(forErrno: errno)) (errno \(errno))"
        }
        if let remedy {
            text += "; \(remedy)"
        }
        return text
    }

    /// What to do about it, where the reason tells.
    private var remedy: String? {
        if code == .invalidAddress {
            return "give a numeric address (127.0.0.1, ::1, 0.0.0.0) or a name this machine resolves"
        }
        guard let errno else { return nil }
        switch errno {
        case EADDRINUSE:
            return "stop the program that uses the port, or pick another port (0 picks a free one)"
        case EADDRNOTAVAIL:
            return "the address is not one of this machine's: listen on one it has (127.0.0.1, ::1, 0.0.0.0)"
        case EACCES where operation == "bind", EPERM where operation == "bind":
            return "ports below 1024 need privileges: pick a higher port"
        case EACCES, EPERM, EROFS:
            return "choose a directory this user can write to"
        case ENOTDIR:
            return "a file stands where a directory should: choose another directory"
        case EEXIST where operation == "mkdir":
            return "something that is not a directory has that name: choose another directory"
        case ENOENT where operation == "mkdir":
            return "check the path, or choose another directory"
        case ENOSPC, EDQUOT:
            return "free some space, or choose another output directory"
        case EMFILE, ENFILE:
            return "too many open files: raise the limit (ulimit -n) or lower the connection and upload limits"
        case ELOOP:
            return "the sink never follows a symbolic link in its output directory: remove the link"
        case ENAMETOOLONG:
            return "choose a shorter path"
        default:
            return nil
        }
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
