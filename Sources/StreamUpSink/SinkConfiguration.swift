/// Everything a ``SinkServer`` can be told. Every value has a default suited to local use.
///
/// Limits and what exceeding them does:
/// - ``maxHeaderBytes``: request line + headers (and, separately, trailers) → `431`, then close.
/// - ``maxChunkLineBytes``: one chunk-size line incl. extensions → `400`, then close.
/// - ``maxConnections``: connections open at once. One more takes the place of the connection
///   that has waited longest for its request head (a trickled head, or a kept-alive connection
///   idle between requests), which is answered `503` (or closed silently if idle); when every
///   connection is inside a request, the new one is answered `503` and closed.
///   See ``ConnectionRegistry``.
/// - ``idleTimeout``: longest wait for the next byte (or for a send to progress). Mid-request →
///   `408` and close; between requests on a kept-alive connection → silent close.
/// - ``headTimeout``: longest a whole request head may take, however steadily its bytes come:
///   from the connection's start for its first request, from its first byte for a later one →
///   `408` and close (silent close when no byte of a first request came).
/// - ``minimumBodyRate``: the slowest a body may arrive while the client owes announced bytes;
///   `nil` turns it off. Slower → `408` and close. See ``SinkBodyRate`` for what is counted, and
///   why a live chunked stream may pause between chunks.
/// - ``maxBodyBytesInMemory``: per request, only with ``keepBodiesInMemory`` → `413`, then close.
/// - ``maxBodyBytes``: per request body, and per resumable upload over all its appends (off by
///   default) → `413`, then close: from the head alone when a `Content-Length` is over it, before
///   any body byte is read; for a chunked body once it passes the limit, keeping exactly the first
///   ``maxBodyBytes`` bytes (a `.partial` file, or in the upload).
/// - ``maxUploads``: resumable uploads open at once (created, not yet completed, cancelled or
///   expired); a creation over it → `503` with `Retry-After`, the connection kept.
/// - ``uploadExpiry``: a resumable upload no request has touched for this long is forgotten
///   (`404` from then on); its file is removed when it held no byte, else kept as `.partial`.
/// - ``maxStreamBytesAside``/``maxStreamPiecesAside``: per de-duplicated stream, the bytes and
///   bodies held aside because they start past the stream file's end (see ``SinkServer``);
///   ``maxBytesAside``/``maxPiecesAside``: the same over all streams (disk and bookkeeping) → a
///   body that would pass any of them is answered `503` with `Retry-After: 1` saying which, the
///   connection kept; a body the stream file can take now always passes.
///
/// Thread safety: a value type that is never shared mutably; safe to send anywhere.
public struct SinkConfiguration: Sendable, Hashable {
    /// The address to listen on: a numeric IPv4/IPv6 address or a name (`localhost`).
    public var host: String
    /// The port; `0` picks a free one (read it from ``SinkServer/port``).
    public var port: UInt16
    /// When set, each request body with a length or chunked framing is stored in its own file
    /// here (created if missing); see ``SinkServer`` for the naming scheme.
    public var outputDirectory: String?
    /// Keep each body in ``SinkRequestEvent/body`` (for tests and embedding), up to
    /// ``maxBodyBytesInMemory`` per request.
    public var keepBodiesInMemory: Bool
    /// Cap on a body kept in memory.
    public var maxBodyBytesInMemory: Int
    /// Compute each body's SHA-256. Turn off to measure the raw receive ceiling.
    public var hashBodies: Bool
    /// Cap on the request head (and on the trailer section), in bytes.
    public var maxHeaderBytes: Int
    /// Cap on one chunk-size line, in bytes.
    public var maxChunkLineBytes: Int
    /// Cap on connections open at once.
    public var maxConnections: Int
    /// Longest silence tolerated on a connection.
    public var idleTimeout: Duration
    /// Longest time a whole request head may take to arrive.
    public var headTimeout: Duration
    /// The slowest a body may arrive while bytes are owed; `nil` for no minimum.
    public var minimumBodyRate: SinkBodyRate?
    /// Size of each connection's receive buffer, in bytes.
    public var readBufferSize: Int
    /// How many recent events ``SinkServer/requests`` keeps (oldest dropped first).
    public var recentEventLimit: Int
    /// Faults to inject on purpose (none by default); see ``SinkFaults``.
    public var faults: SinkFaults
    /// Cap on one request's body, and on a resumable upload's bytes in total; `nil` for none.
    public var maxBodyBytes: Int?
    /// Cap on resumable uploads open at once.
    public var maxUploads: Int
    /// How long a resumable upload may sit idle (no request attached) before it is forgotten.
    public var uploadExpiry: Duration
    /// Answer an upload creation of the resumable-upload protocol with the interim
    /// `104 Upload Resumption Supported` (carrying the upload's `Location`) as soon as its head
    /// is accepted, so a client cut off mid-body can resume. See ``SinkServer``.
    public var sendsUploadResumptionSupported: Bool
    /// Cap on the bytes one de-duplicated stream holds aside (bodies that start past the stream
    /// file's end, waiting for the gap before them). 64 MiB by default: a sender with several
    /// segments in flight holds every unjoined segment in its own buffer (8 MiB by default) until
    /// the stream before it is acknowledged, so this covers buffers up to 64 MiB; a bigger sender
    /// is told to retry (`503`) and its oldest segment, which the file can take, always passes.
    public var maxStreamBytesAside: Int
    /// Cap on the bodies one de-duplicated stream holds aside: each is a file in the output
    /// directory; 64 by default, one for every segment a sender may have in flight past the
    /// oldest.
    public var maxStreamPiecesAside: Int
    /// Cap on the bytes all de-duplicated streams together hold aside (disk in the output
    /// directory): 1 GiB by default, 16 streams at their own cap; then a body past a stream's end
    /// is told to retry (`503`).
    public var maxBytesAside: Int
    /// Cap on the bodies all de-duplicated streams together hold aside (a file each, and its
    /// bookkeeping in memory): 1,024 by default.
    public var maxPiecesAside: Int

    public init(
        host: String = "127.0.0.1",
        port: UInt16 = 0,
        outputDirectory: String? = nil,
        keepBodiesInMemory: Bool = false,
        maxBodyBytesInMemory: Int = 64 << 20,
        hashBodies: Bool = true,
        maxHeaderBytes: Int = 16_384,
        maxChunkLineBytes: Int = 1_024,
        maxConnections: Int = 1_024,
        idleTimeout: Duration = .seconds(60),
        readBufferSize: Int = 65_536,
        recentEventLimit: Int = 1_000,
        faults: SinkFaults = .none,
        sendsUploadResumptionSupported: Bool = true,
        maxBodyBytes: Int? = nil,
        headTimeout: Duration = .seconds(10),
        minimumBodyRate: SinkBodyRate? = .standard,
        maxUploads: Int = 1_000,
        uploadExpiry: Duration = .seconds(3_600),
        maxStreamBytesAside: Int = 64 << 20,
        maxStreamPiecesAside: Int = 64,
        maxBytesAside: Int = 1 << 30,
        maxPiecesAside: Int = 1_024
    ) {
        self.host = host
        self.port = port
        self.outputDirectory = outputDirectory
        self.keepBodiesInMemory = keepBodiesInMemory
        self.maxBodyBytesInMemory = maxBodyBytesInMemory
        self.hashBodies = hashBodies
        self.maxHeaderBytes = maxHeaderBytes
        self.maxChunkLineBytes = maxChunkLineBytes
        self.maxConnections = maxConnections
        self.idleTimeout = idleTimeout
        self.readBufferSize = readBufferSize
        self.recentEventLimit = recentEventLimit
        self.faults = faults
        self.sendsUploadResumptionSupported = sendsUploadResumptionSupported
        self.maxBodyBytes = maxBodyBytes
        self.headTimeout = headTimeout
        self.minimumBodyRate = minimumBodyRate
        self.maxUploads = maxUploads
        self.uploadExpiry = uploadExpiry
        self.maxStreamBytesAside = maxStreamBytesAside
        self.maxStreamPiecesAside = maxStreamPiecesAside
        self.maxBytesAside = maxBytesAside
        self.maxPiecesAside = maxPiecesAside
    }

    /// Throws ``SinkError/Code/invalidConfiguration`` naming the first value out of range.
    func validate() throws(SinkError) {
        func check(_ ok: Bool, _ what: String) throws(SinkError) {
            guard ok else {
                throw SinkError(.invalidConfiguration, operation: "SinkConfiguration", detail: what)
            }
        }
        try check(!host.isEmpty, "host must not be empty")
        try check(maxBodyBytesInMemory >= 0, "maxBodyBytesInMemory must be >= 0")
        try check((maxBodyBytes ?? 0) >= 0, "maxBodyBytes must be >= 0")
        try check((64...(1 << 24)).contains(maxHeaderBytes), "maxHeaderBytes must be in 64...16 MiB")
        try check((8...(1 << 20)).contains(maxChunkLineBytes), "maxChunkLineBytes must be in 8...1 MiB")
        try check(maxConnections >= 1, "maxConnections must be >= 1")
        try check(idleTimeout > .zero, "idleTimeout must be > 0")
        try check(headTimeout > .zero, "headTimeout must be > 0")
        try minimumBodyRate?.validate()
        try check(maxUploads >= 1, "maxUploads must be >= 1")
        try check(uploadExpiry > .zero, "uploadExpiry must be > 0")
        try check((1_024...(64 << 20)).contains(readBufferSize), "readBufferSize must be in 1 KiB...64 MiB")
        try check(recentEventLimit >= 0, "recentEventLimit must be >= 0")
        try check(maxStreamBytesAside >= 0, "maxStreamBytesAside must be >= 0")
        try check(maxStreamPiecesAside >= 0, "maxStreamPiecesAside must be >= 0")
        try check(maxBytesAside >= 0, "maxBytesAside must be >= 0")
        try check(maxPiecesAside >= 0, "maxPiecesAside must be >= 0")
        try faults.validate()
    }
}
