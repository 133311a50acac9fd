import Foundation
import StreamUpHTTP

/// The body of one live chunked request (``StreamUploader/SegmentDelivery/singleRequest``):
/// a stream over the uploader's `ReplayBuffer` that takes bytes as the connection reads them
/// (``ReplayBuffer/readLive(into:blocking:)``), with the ``BodyEncoding`` stages above it,
/// handed over in `needNewBodyStream`. URLSession may ask again while no byte has been taken
/// (then the same stream is fine); after that the bytes are gone, and the request fails with a
/// clear reason.
///
/// Thread safety: immutable after `init`; the buffer is locked, the stream's status too.
final class LiveBody: RequestBody, @unchecked Sendable {
    private let buffer: ReplayBuffer
    /// The stream offset of the body's first byte.
    private let start: Int
    /// Set once in `init`; `BodyInputStream` is thread-safe (see `StreamReference`).
    private let stream: StreamReference<BodyInputStream>

    init(_ buffer: ReplayBuffer, encoding: BodyEncoding) {
        self.buffer = buffer
        start = buffer.acknowledgedOffset
        stream = StreamReference(BodyInputStream(source: encoding.stages(over: LiveSource(buffer))))
    }

    func stream(forAttempt attempt: Int) -> InputStream? {
        let sent = bytesSent
        if attempt == 1 || sent == 0 { return stream.value }
        let error = StreamUpError(
            .bodyNotRewindable,
            "the server asked for the body again after \(counted(sent, "byte")) \(sent == 1 ? "was" : "were") sent; a live stream cannot be re-sent")
        buffer.failWriting(error)
        return nil
    }

    /// Bytes of the stream taken by the connection (before any encoding).
    var bytesSent: Int { buffer.acknowledgedOffset - start }
    var failure: StreamUpError? { buffer.failure }
    /// The request is over: a producer still writing has nowhere to write to.
    func close() { buffer.failWriting(StreamUpError(.bodyStreamClosed, "the upload stopped reading the body")) }
    func abort(_ error: StreamUpError) { buffer.failWriting(error) }
}

/// The buffer's live read as the lowest body stage, so that an envelope or gzip can sit above it.
///
/// Thread safety: read by URLSession's one reading thread; the buffer is locked.
final class LiveSource: BodySource, @unchecked Sendable {
    private let buffer: ReplayBuffer

    init(_ buffer: ReplayBuffer) {
        self.buffer = buffer
    }

    func read(into destination: UnsafeMutableRawBufferPointer, blocking: Bool) throws -> BodyRead {
        try buffer.readLive(into: destination, blocking: blocking)
    }
}
