import Foundation

/// Things that happen to an upload, for logging. StreamUp itself never prints.
///
/// Thread safety: a value type.
public enum UploadEvent: Sendable {
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
    /// ``ReliableUploader/Options/answerReader``): `reason` is one line on what it said, and
    /// `file` where they were kept (nil without a dead-letter directory). They are not sent again.
    case recordsRejected(count: Int, reason: String, file: String?)
    /// Something a person should know that is not a failure (reliable delivery).
    case notice(String)
    /// What a producer that follows files says about them (``FileTailer``).
    case source(SourceEvent)
}
