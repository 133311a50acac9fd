import Foundation
import StreamUpHTTP

/// The body of a single request (``StreamUploader``): the input side of its bound pair (with
/// its ``BodyEncoding`` stages above it), handed over once. URLSession may ask again while no byte has been taken (then the same stream is
/// fine); after that the bytes are gone, and the request fails with a clear reason.
///
/// Thread safety: immutable after `init`; the pair's core and the body stream are thread-safe.
final class BoundStreamBody: RequestBody, @unchecked Sendable {
    private let input: StreamReference<BoundInputStream>
    /// The stream URLSession reads: the pair's input itself, or encoding stages over it. Set
    /// once in `init`; `BodyInputStream` is thread-safe (see `StreamReference`).
    private let encoded: StreamReference<BodyInputStream>?

    init(_ input: BoundInputStream, encoding: BodyEncoding = BodyEncoding()) {
        self.input = StreamReference(input)
        encoded = encoding.isIdentity ? nil : StreamReference(BodyInputStream(source: encoding.stages(over: BoundStreamSource(input))))
    }

    func stream(forAttempt attempt: Int) -> InputStream? {
        let core = input.value.core
        if attempt == 1 || core.bytesRead == 0 {
            if let encoded {
                input.value.open()
                return encoded.value
            }
            return input.value
        }
        core.fail(
            StreamUpError(
                .bodyNotRewindable,
                "the server asked for the body again after \(counted(core.bytesRead, "byte")) \(core.bytesRead == 1 ? "was" : "were") sent; a live stream cannot be re-sent"
            ))
        return nil
    }

    var bytesSent: Int { input.value.core.bytesRead }
    var failure: StreamUpError? { input.value.core.failure }
    func close() { input.value.close() }
    func abort(_ error: StreamUpError) { input.value.core.fail(error) }
}
