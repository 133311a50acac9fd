/// What a ``SinkServer`` made with a responder answers to a request, instead of storing it:
/// the server stays the sink (limits, deadlines, bounded connections), the answers are the
/// caller's. `streamup --metrics` serves `/metrics` and `/health` this way.
///
/// Thread safety: a value type.
package struct SinkAnswer: Sendable, Equatable {
    package var status: Int
    package var contentType: String
    package var body: String
    package var headers: [SinkHeaderField]

    package init(status: Int, contentType: String = "text/plain; charset=utf-8", body: String, headers: [SinkHeaderField] = []) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.headers = headers
    }
}

/// Answers a request from its method and target (path and query, as sent); called on the
/// connection's thread once the head has arrived (the body, if any, is read and discarded).
package typealias SinkResponder = @Sendable (_ method: String, _ target: String) -> SinkAnswer
