import Foundation
import StreamUpHTTP

/// Something that happened to an upload, for logging: its ``kind``, whether a person should
/// see it without asking (``isNotice``), and one line for a person (``description``). StreamUp
/// itself never prints. Kinds may be added in later versions: a `switch` over ``kind`` needs a
/// `default`.
///
/// Thread safety: a value type.
public struct UploadEvent: Sendable, CustomStringConvertible {
    /// What kind of thing happened.
    ///
    /// Thread safety: a value type.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, e.g. `retrying`.
        public let name: String
        public var description: String { name }

        /// A request went out.
        public static let requestStarted = Kind(name: "requestStarted")
        /// The server's status line and header fields arrived.
        public static let responseReceived = Kind(name: "responseReceived")
        /// The server asked to redirect; a live body cannot follow it, so the 3xx is the answer.
        public static let redirectRefused = Kind(name: "redirectRefused")
        /// A request failed and will be tried again after a backoff.
        public static let retrying = Kind(name: "retrying")
        /// Delivery works again after failures.
        public static let recovered = Kind(name: "recovered")
        /// A segment the server refused for good was set aside in a file, and the stream went on.
        public static let deadLettered = Kind(name: "deadLettered")
        /// The receiver refused some records while it stored the others (not sent again).
        public static let recordsRejected = Kind(name: "recordsRejected")
        /// Something a person should know that is not a failure.
        public static let notice = Kind(name: "notice")
        /// What a producer that follows files says about them (`FileTailer`).
        public static let source = Kind(name: "source")
        /// A ``TelemetryEmitter`` stopped for good (its retry limit reached, or an answer no
        /// retry changes): what it held is not delivered, and later records are dropped.
        public static let gaveUp = Kind(name: "gaveUp")
    }

    /// What happened, with its details: what the package's tools switch over.
    package enum Detail: Sendable {
        /// The request went out: method, URL and the header fields set by streamup, framing included.
        case requestStarted(method: String, url: URL, headers: [UploadConfiguration.Header])
        /// The server's status line and header fields arrived.
        case responseReceived(statusCode: Int, headers: [String: String])
        /// The server asked to redirect; a live body cannot follow it, so the 3xx is the answer.
        case redirectRefused(statusCode: Int, location: String?)
        /// A request failed (`reason`) and will be tried again after `delay`; `attempt` counts the
        /// failures in a row, and `first` marks the first of a spell (reliable delivery).
        case retrying(reason: String, attempt: Int, delay: Duration, first: Bool)
        /// Delivery works again after `failedAttempts` failures over `after`; `resentBytes` were
        /// sent more than once, and when `duplicatesPossible` (plain requests, not the resumable
        /// protocol) a receiver that does not de-duplicate may hold some of them twice.
        case recovered(failedAttempts: Int, resentBytes: Int, after: Duration, duplicatesPossible: Bool)
        /// A segment the server refused for good (or that ran out of retries) was set aside in
        /// `file` (`--dead-letter`), and the stream went on.
        case deadLettered(bytes: Int, file: String, reason: String)
        /// The receiver refused `count` records while it stored the others (a partial failure,
        /// `StreamUploader.Options.answerReader`): `reason` is one line on what it said, and
        /// `file` where they were kept (nil without a dead-letter directory). They are not sent again.
        case recordsRejected(count: Int, reason: String, file: String?)
        /// Something a person should know that is not a failure (reliable delivery).
        case notice(String)
        /// What a producer that follows files says about them (`FileTailer`).
        case source(SourceEvent)
        /// A telemetry emitter stopped for good; the text says why and what was lost.
        case gaveUp(String)
    }

    /// What happened, with its details.
    package let detail: Detail

    package init(_ detail: Detail) {
        self.detail = detail
    }

    /// What kind of thing happened.
    public var kind: Kind {
        switch detail {
        case .requestStarted: .requestStarted
        case .responseReceived: .responseReceived
        case .redirectRefused: .redirectRefused
        case .retrying: .retrying
        case .recovered: .recovered
        case .deadLettered: .deadLettered
        case .recordsRejected: .recordsRejected
        case .notice: .notice
        case .source: .source
        case .gaveUp: .gaveUp
        }
    }

    /// The HTTP status of a response or of a refused redirect; nil for the other kinds.
    public var statusCode: Int? {
        switch detail {
        case .responseReceived(let statusCode, _), .redirectRefused(let statusCode, _): statusCode
        default: nil
        }
    }

    /// Whether a person should see it without asking for details: the first failure of a spell,
    /// recoveries, dead letters, refused records, notices, and a file follower's warnings. The
    /// rest (each request and answer, each further retry) is for a verbose log.
    public var isNotice: Bool {
        switch detail {
        case .requestStarted, .responseReceived, .redirectRefused: false
        case .retrying(_, _, _, let first): first
        case .recovered, .deadLettered, .recordsRejected, .notice, .gaveUp: true
        case .source(let event): event.isNotice
        }
    }

    /// One line for a person (credentials already redacted).
    public var description: String {
        switch detail {
        case .requestStarted(let method, let url, _):
            "\(method) \(url.absoluteString)"
        case .responseReceived(let statusCode, _):
            "the server answered \(statusCode)"
        case .redirectRefused(let statusCode, let location):
            "not following the \(statusCode) redirect to \(location ?? "?"): a live body cannot be sent twice"
        case .retrying(let reason, let attempt, let delay, _):
            "\(reason); trying again in \(delay) (failure \(attempt) in a row)"
        case .recovered(let failedAttempts, let resentBytes, let after, _):
            "delivery recovered after \(counted(failedAttempts, "failed attempt"))" + (after < .milliseconds(1) ? "" : " over \(StreamUploader.spoken(after))")
                + (resentBytes > 0 ? "; \(counted(resentBytes, "byte")) sent again" : "")
        case .deadLettered(let bytes, let file, let reason):
            "\(reason): kept the segment (\(counted(bytes, "byte"))) in \(file) and went on"
        case .recordsRejected(_, let reason, let file):
            reason + (file.map { "; kept in \($0)" } ?? "")
        case .notice(let text), .gaveUp(let text):
            text
        case .source(let event):
            event.description
        }
    }

    package static func requestStarted(method: String, url: URL, headers: [UploadConfiguration.Header]) -> UploadEvent {
        UploadEvent(.requestStarted(method: method, url: url, headers: headers))
    }

    package static func responseReceived(statusCode: Int, headers: [String: String]) -> UploadEvent {
        UploadEvent(.responseReceived(statusCode: statusCode, headers: headers))
    }

    package static func redirectRefused(statusCode: Int, location: String?) -> UploadEvent {
        UploadEvent(.redirectRefused(statusCode: statusCode, location: location))
    }

    package static func retrying(reason: String, attempt: Int, delay: Duration, first: Bool) -> UploadEvent {
        UploadEvent(.retrying(reason: reason, attempt: attempt, delay: delay, first: first))
    }

    package static func recovered(failedAttempts: Int, resentBytes: Int, after: Duration, duplicatesPossible: Bool) -> UploadEvent {
        UploadEvent(.recovered(failedAttempts: failedAttempts, resentBytes: resentBytes, after: after, duplicatesPossible: duplicatesPossible))
    }

    package static func deadLettered(bytes: Int, file: String, reason: String) -> UploadEvent {
        UploadEvent(.deadLettered(bytes: bytes, file: file, reason: reason))
    }

    package static func recordsRejected(count: Int, reason: String, file: String?) -> UploadEvent {
        UploadEvent(.recordsRejected(count: count, reason: reason, file: file))
    }

    package static func notice(_ text: String) -> UploadEvent {
        UploadEvent(.notice(text))
    }

    package static func gaveUp(_ text: String) -> UploadEvent {
        UploadEvent(.gaveUp(text))
    }

    package static func source(_ event: SourceEvent) -> UploadEvent {
        UploadEvent(.source(event))
    }
}
