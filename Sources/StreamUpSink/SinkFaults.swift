/// Faults a ``SinkServer`` injects on purpose, to test how senders cope with a bad receiver.
/// The default value injects none. Every fault is deterministic: it depends only on the order
/// of requests and on byte counts, never on chance.
///
/// - ``dropAfterBytes``: once `N` body bytes of a request have arrived, the connection is reset
///   (`SO_LINGER` 0, then `close`) without a response. Only the first request whose body
///   reaches `N` bytes is dropped, unless ``dropRepeatedly`` is set: then a connection is reset
///   each time another `N` body bytes have arrived, counted across all requests, so requests
///   shorter than `N` are cut too (one in every few). The request is reported incomplete
///   (status `0`) and its file keeps the `.partial` suffix.
/// - ``failNextRequests``/``failStatus``: the next `K` requests (in arrival order) have their
///   bodies read and discarded and are answered ``failStatus`` with a small JSON error body,
///   instead of `200`. `503` and `429` also carry `Retry-After` (``retryAfterSeconds``, default 1).
/// - ``loseAnswers``: the next `K` requests that would be answered `200` (plain uploads and
///   completed resumable uploads; never a `201`/`204`) are stored as usual, then the connection
///   is reset instead of answering: the client cannot know its request succeeded. Reported with
///   status `0` and complete.
/// - ``loseAnswersOfStreamRequests``: the requests of a de-duplicated stream with these numbers
///   (1-based, counted per `Streamup-Stream-Id` in the order their heads arrive, resends
///   included) lose their `200` the same way: stored (joined or held aside), then the connection
///   is reset. With several requests of a stream in flight, one in the middle can lose its answer
///   while those after it are answered.
/// - ``conflictForgetsUpload``: a `409` to a resumable-upload `PATCH` (wrong offset, or another
///   request still appending) also forgets the upload, as Apple's NIOResumableUpload does: a
///   client that sends a PATCH without asking for the offset first loses its upload (`404` next).
/// - ``readBytesPerSecond``: each connection reads no faster than this on average (the thread
///   sleeps between reads; memory stays bounded by the receive buffer).
/// - ``stallAfterBytes``: once `N` body bytes of the first request that reaches `N` have arrived,
///   the connection reads nothing more until the idle timeout passes or the server stops, then
///   closes; the request is reported incomplete.
/// - ``forgetUploadsAfterBytes``: once `N` body bytes of resumable uploads (creations and
///   appends, counted together across all uploads and connections) have arrived, the sink
///   forgets every resumable upload, as a restart would: later requests for them get `404`.
///   The connection that carried byte `N` is reset like a drop (that byte is kept), other
///   connections appending to an upload are closed. Happens once. Plain requests and de-duplicated
///   stream files are untouched.
/// - ``answerDelay``: each `200` to a plain request (stream requests included) is sent this long
///   after its body ended and was stored: the connection's thread waits, other connections go
///   on. A far receiver, or one that commits before it answers (Elasticsearch indexing a bulk,
///   ClickHouse writing a part), as a sender's benchmark needs it.
///
/// The byte faults apply to every request with a body, resumable-upload appends included; bytes
/// an upload received before its connection was cut stay in the upload.
///
/// Thread safety: a value type that is never shared mutably; safe to send anywhere.
public struct SinkFaults: Sendable, Hashable {
    /// Reset the connection after this many body bytes of a request; `nil` for never.
    public var dropAfterBytes: Int?
    /// Drop every ``dropAfterBytes`` body bytes (counted across requests) instead of once.
    public var dropRepeatedly: Bool
    /// How many of the next requests are answered ``failStatus``.
    public var failNextRequests: Int
    /// The status answered to failed requests (`400...599`).
    public var failStatus: Int
    /// How many of the next `200` answers are lost after the request was stored.
    public var loseAnswers: Int
    /// Which requests of each stream (1-based, per stream id, by arrival) lose their `200`.
    public var loseAnswersOfStreamRequests: Set<Int>
    /// A `409` to a PATCH forgets the upload too (NIOResumableUpload's behaviour).
    public var conflictForgetsUpload: Bool
    /// `Retry-After` seconds sent with a failed `503`/`429`; `nil` means 1.
    public var retryAfterSeconds: Int?
    /// Average read rate per connection in bytes per second; `nil` for unthrottled.
    public var readBytesPerSecond: Int?
    /// Stop reading the first request that reaches this many body bytes; `nil` for never.
    public var stallAfterBytes: Int?
    /// Forget all resumable uploads once this many of their body bytes have arrived (at least
    /// 1); `nil` for never.
    public var forgetUploadsAfterBytes: Int?
    /// Wait this long after a plain request's body ended before answering it `200`; `nil` for
    /// at once.
    public var answerDelay: Duration?

    /// No faults.
    public static let none = SinkFaults()

    public init(
        dropAfterBytes: Int? = nil,
        dropRepeatedly: Bool = false,
        failNextRequests: Int = 0,
        failStatus: Int = 503,
        loseAnswers: Int = 0,
        conflictForgetsUpload: Bool = false,
        retryAfterSeconds: Int? = nil,
        readBytesPerSecond: Int? = nil,
        stallAfterBytes: Int? = nil,
        forgetUploadsAfterBytes: Int? = nil,
        answerDelay: Duration? = nil,
        loseAnswersOfStreamRequests: Set<Int> = []
    ) {
        self.dropAfterBytes = dropAfterBytes
        self.dropRepeatedly = dropRepeatedly
        self.failNextRequests = failNextRequests
        self.failStatus = failStatus
        self.loseAnswers = loseAnswers
        self.conflictForgetsUpload = conflictForgetsUpload
        self.retryAfterSeconds = retryAfterSeconds
        self.readBytesPerSecond = readBytesPerSecond
        self.stallAfterBytes = stallAfterBytes
        self.forgetUploadsAfterBytes = forgetUploadsAfterBytes
        self.answerDelay = answerDelay
        self.loseAnswersOfStreamRequests = loseAnswersOfStreamRequests
    }

    /// The `Retry-After` value for a failed request, or `nil` when none is sent.
    var retryAfterValue: Int? {
        guard failStatus == 503 || failStatus == 429 || retryAfterSeconds != nil else { return nil }
        return retryAfterSeconds ?? 1
    }

    /// Throws ``SinkError/Code/invalidConfiguration`` naming the first value out of range.
    func validate() throws(SinkError) {
        func check(_ ok: Bool, _ what: String) throws(SinkError) {
            guard ok else {
                throw SinkError(.invalidConfiguration, operation: "SinkFaults", detail: what)
            }
        }
        try check((dropAfterBytes ?? 0) >= 0, "dropAfterBytes must be >= 0")
        try check(failNextRequests >= 0, "failNextRequests must be >= 0")
        try check(loseAnswers >= 0, "loseAnswers must be >= 0")
        try check((400...599).contains(failStatus), "failStatus must be in 400...599")
        try check((retryAfterSeconds ?? 0) >= 0, "retryAfterSeconds must be >= 0")
        try check((readBytesPerSecond ?? 1) >= 1, "readBytesPerSecond must be >= 1")
        try check((stallAfterBytes ?? 0) >= 0, "stallAfterBytes must be >= 0")
        try check((forgetUploadsAfterBytes ?? 1) >= 1, "forgetUploadsAfterBytes must be >= 1")
        try check((answerDelay ?? .zero) >= .zero, "answerDelay must be >= 0")
        try check(loseAnswersOfStreamRequests.allSatisfy { $0 >= 1 }, "loseAnswersOfStreamRequests must be >= 1")
    }
}
