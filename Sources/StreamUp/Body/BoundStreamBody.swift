import Foundation

/// The body of a single request (``StreamUploader``): the input side of its bound pair, handed
/// over once. URLSession may ask again while no byte has been taken (then the same stream is
/// fine); after that the bytes are gone, and the request fails with a clear reason.
///
/// Thread safety: immutable; the pair's core is thread-safe.
final class BoundStreamBody: RequestBody, Sendable {
    private let input: StreamReference<BoundInputStream>

    init(_ input: BoundInputStream) {
        self.input = StreamReference(input)
    }

    func stream(forAttempt attempt: Int) -> InputStream? {
        let core = input.value.core
        if attempt == 1 || core.bytesRead == 0 { return input.value }
        core.fail(StreamUpError(
            .bodyNotRewindable,
            "the server asked for the body again after \(core.bytesRead) bytes were sent; a live stream cannot be re-sent"))
        return nil
    }

    var bytesSent: Int { input.value.core.bytesRead }
    var failure: StreamUpError? { input.value.core.failure }
    func close() { input.value.close() }
    func abort(_ error: StreamUpError) { input.value.core.fail(error) }
}
