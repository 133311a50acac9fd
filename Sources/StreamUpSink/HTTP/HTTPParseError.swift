/// Why a request could not be parsed, and the status the sink answers with.
///
/// Every parse error ends the connection: the framing is no longer trustworthy.
///
/// Thread safety: a value type that is never shared.
struct HTTPParseError: Error, Hashable, CustomStringConvertible {
    /// The HTTP status to answer with (400, 431, 501 or 505).
    let status: Int
    /// A short reason, sent in the error response and reported in the event.
    let reason: String

    static func badRequest(_ reason: String) -> HTTPParseError {
        HTTPParseError(status: 400, reason: reason)
    }

    static func headerTooLarge(_ reason: String) -> HTTPParseError {
        HTTPParseError(status: 431, reason: reason)
    }

    static func notImplemented(_ reason: String) -> HTTPParseError {
        HTTPParseError(status: 501, reason: reason)
    }

    static func versionNotSupported(_ reason: String) -> HTTPParseError {
        HTTPParseError(status: 505, reason: reason)
    }

    var description: String { "\(status) \(reason)" }
}
