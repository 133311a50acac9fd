import StreamUpHTTP

/// What happened to one request: reported once per finished, rejected or aborted request.
///
/// A request the sink could not even read the head of (a malformed head, a client that went
/// away mid-head, a connection turned away at the limit) has an empty ``method`` and ``path``.
/// ``isComplete`` is true only when the whole body arrived and was stored; ``status`` is the
/// status the sink answered (or tried to answer) and `0` when it sent none because the client
/// went away or the server stopped.
///
/// A request of the resumable-upload protocol is reported like any other, with its own
/// ``bodyByteCount`` (the bytes this request carried) and ``uploadOffset`` (the bytes its upload
/// held afterwards). Only the request that completes an upload has a ``sha256``: the digest of
/// the whole upload. ``storedFile`` is the upload's file (or its stream's).
///
/// Thread safety: a value type that is never shared mutably; safe to send anywhere.
public struct SinkRequestEvent: Sendable, Hashable {
    /// Order of arrival on this server, from 1 (continuing after files already in the output
    /// directory). Stored file names start with it.
    public var sequence: Int
    public var method: String
    /// The request target as sent, e.g. `/ingest?x=1`.
    public var path: String
    /// `HTTP/1.1`, `HTTP/1.0`, or empty when the request line never arrived.
    public var version: String
    public var headers: [SinkHeaderField]
    /// Trailer fields of a chunked body.
    public var trailers: [SinkHeaderField]
    /// Decoded body bytes received (for an incomplete request: received so far).
    public var bodyByteCount: Int
    /// Lower-case hex SHA-256 of the bytes received; `nil` when hashing is turned off.
    public var sha256: String?
    /// The body, when ``SinkConfiguration/keepBodiesInMemory`` is on.
    public var body: [UInt8]?
    /// The file holding the body: `….body` when complete, `….partial` when not.
    public var storedFile: String?
    /// From the request's first byte to its end (or abort).
    public var duration: Duration
    /// The status answered; `0` when none was sent.
    public var status: Int
    /// True when the body arrived in full and was stored.
    public var isComplete: Bool
    /// The client's address, `host:port`.
    public var peer: String
    /// Why the request was rejected or aborted; `nil` for a completed request.
    public var failure: String?
    /// For a request that created or appended to a resumable upload: the bytes the upload held
    /// after it (also after a cut). `nil` for every other request.
    public var uploadOffset: Int?

    public init(
        sequence: Int, method: String, path: String, version: String,
        headers: [SinkHeaderField], trailers: [SinkHeaderField],
        bodyByteCount: Int, sha256: String?, body: [UInt8]?, storedFile: String?,
        duration: Duration, status: Int, isComplete: Bool, peer: String, failure: String?,
        uploadOffset: Int? = nil
    ) {
        self.sequence = sequence
        self.method = method
        self.path = path
        self.version = version
        self.headers = headers
        self.trailers = trailers
        self.bodyByteCount = bodyByteCount
        self.sha256 = sha256
        self.body = body
        self.storedFile = storedFile
        self.duration = duration
        self.status = status
        self.isComplete = isComplete
        self.peer = peer
        self.failure = failure
        self.uploadOffset = uploadOffset
    }

    /// ``duration`` in seconds.
    public var seconds: Double {
        duration.seconds
    }
}
