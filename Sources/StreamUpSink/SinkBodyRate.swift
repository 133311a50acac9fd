/// The slowest a request body may arrive (``SinkConfiguration/minimumBodyRate``), so that a client
/// dripping a body cannot hold a connection slot for as long as it likes.
///
/// What counts: only the time the sink spends *waiting for bytes the client has announced and
/// owes*: the rest of a `Content-Length` body, or the rest of a chunk whose size line has begun
/// (and the trailer section). A chunked body *between* chunks owes nothing, so a live stream
/// (`tail -F | streamup URL`) may pause there for as long as the idle timeout allows; the rate
/// applies again once it starts its next chunk. Time the sink itself spends writing, hashing or
/// (with ``SinkFaults/readBytesPerSecond``) throttling is never counted against the client.
///
/// How it is measured: each request starts with ``grace`` of credit. Every second of owed
/// waiting spends a second; every byte received earns `1 / bytesPerSecond` seconds, up to
/// ``window`` of credit. When the credit runs out the request is answered `408` and the
/// connection closed. So a client must average ``bytesPerSecond`` over any stretch longer than
/// ``window``, may stall for at most ``window`` after a healthy stretch, and for at most
/// ``grace`` at the start.
///
/// Why this meaning rather than bytes over wall-clock time: a rate over wall-clock time would cut
/// every quiet live stream (Apache's `mod_reqtimeout` does, after ~10 s), and live streams are what
/// this sink exists to receive. The price: a client that sends complete tiny chunks just inside
/// the idle timeout looks exactly like a quiet stream; the idle timeout and
/// ``SinkConfiguration/maxConnections`` are what bound it.
///
/// Thread safety: a value type that is never shared mutably; safe to send anywhere.
public struct SinkBodyRate: Sendable, Hashable {
    /// The least average rate, in bytes per second (body and chunk framing bytes alike).
    public var bytesPerSecond: Int
    /// The most credit a request can hold: the longest stall tolerated after a healthy stretch.
    public var window: Duration
    /// The credit a request starts with.
    public var grace: Duration

    /// 500 bytes per second over 10 s, after a grace of 10 s.
    public static let standard = SinkBodyRate(bytesPerSecond: 500, window: .seconds(10), grace: .seconds(10))

    public init(bytesPerSecond: Int, window: Duration, grace: Duration) {
        self.bytesPerSecond = bytesPerSecond
        self.window = window
        self.grace = grace
    }

    /// Throws ``SinkError/Code/invalidConfiguration`` naming the first value out of range.
    func validate() throws(SinkError) {
        func check(_ ok: Bool, _ what: String) throws(SinkError) {
            guard ok else {
                throw SinkError(.invalidConfiguration, operation: "SinkBodyRate", detail: what)
            }
        }
        try check(bytesPerSecond >= 1, "bytesPerSecond must be >= 1")
        try check(window > .zero, "window must be > 0")
        try check(grace > .zero, "grace must be > 0")
    }
}
