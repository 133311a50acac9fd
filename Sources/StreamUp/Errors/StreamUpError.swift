import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The one error type the StreamUp library throws.
///
/// Branch on `code`; `description` is for people. An HTTP answer that is not 2xx is *not* an
/// error: it comes back as an ``UploadResponse`` and the caller decides what it means.
///
/// Thread safety: a value type; safe to pass anywhere.
public struct StreamUpError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        enum Base: String, Sendable {
            case invalidURL = "invalid URL"
            case invalidConfiguration = "invalid configuration"
            case transport = "transport failure"
            case cancelled = "cancelled"
            case bodyStreamClosed = "body stream closed"
            case bodyNotRewindable = "body cannot be re-sent"
            case io = "I/O error"
            case producerFailed = "producer failed"
            case protocolError = "protocol error"
            case timedOut = "timed out"
        }
        let base: Base

        /// The URL could not be parsed or is not `http`/`https`.
        public static let invalidURL = Code(base: .invalidURL)
        /// An option has a value that cannot work (for example a zero buffer size).
        public static let invalidConfiguration = Code(base: .invalidConfiguration)
        /// The connection could not be made or broke: refused, reset, unreachable, DNS, TLS, timeout.
        public static let transport = Code(base: .transport)
        /// The upload was cancelled by its owner.
        public static let cancelled = Code(base: .cancelled)
        /// The other side of the buffer went away: a write after the upload stopped reading, or a
        /// read of the live body after the producer side failed.
        public static let bodyStreamClosed = Code(base: .bodyStreamClosed)
        /// The server or URLSession asked for the body again (a redirect, an auth challenge) after
        /// live bytes had already been sent; a live stream cannot be rewound.
        public static let bodyNotRewindable = Code(base: .bodyNotRewindable)
        /// A system call failed; `errno` holds the reason.
        public static let io = Code(base: .io)
        /// A producer threw an error of its own.
        public static let producerFailed = Code(base: .producerFailed)
        /// The server broke the resumable-upload protocol (no upload `Location`, an offset it
        /// cannot hold).
        public static let protocolError = Code(base: .protocolError)
        /// A deadline the caller set passed first (``TelemetryEmitter/flush(within:)``,
        /// ``TelemetryEmitter/finish(within:)``).
        public static let timedOut = Code(base: .timedOut)

        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public let code: Code
    /// What was being done, in words, for `description`.
    public let context: String
    /// The URLSession error behind a transport failure, if any.
    public let urlError: URLError?
    /// The errno behind an I/O failure, if any.
    public let errno: Int32?

    package init(_ code: Code, _ context: String, urlError: URLError? = nil, errno: Int32? = nil) {
        self.code = code
        self.context = context
        self.urlError = urlError
        self.errno = errno
    }

    public var description: String {
        var text = context
        if let errno { text += ": \(String(cString: strerror(errno))) (errno \(errno))" }
        return text
    }
}
