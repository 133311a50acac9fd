extension StreamUploader {
    /// How the segments of a stream reach the server.
    ///
    /// Thread safety: a value type.
    public enum SegmentDelivery: Sendable, Hashable {
        /// Each segment is a request of its own (the configuration's method), naming its place
        /// in the stream with `Streamup-Stream-Id` and `Streamup-Offset`: any HTTP receiver.
        case requests
        /// Segments are PATCHes appending to one IETF resumable upload (draft interop version
        /// 6); after a failure the server is asked how much it holds, so nothing is sent twice.
        case resumableUpload
        /// One chunked request that lasts as long as the producer, for receivers that store a
        /// body while it streams: its body is a stream over the same buffer, handed to
        /// URLSession in `needNewBodyStream`, and each byte is released as the connection takes
        /// it. Nothing is retried or sent again; the answer comes when the stream ends. The
        /// storage must be memory (its capacity is the buffer the producer waits on), with no
        /// state file and one endpoint.
        case singleRequest
    }
}
