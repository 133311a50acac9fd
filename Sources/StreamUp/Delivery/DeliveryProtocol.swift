/// How segments reach the server: ``PlainDelivery`` (each segment a complete request) or
/// ``ResumableDelivery`` (appends to one resumable upload). A step makes one exchange with the
/// server and says what came of it; ``ReliableUploader`` owns the replay buffer, retries and
/// backoff.
///
/// Thread safety: a delivery is used by one uploader's delivery task only, one step at a time.
protocol DeliveryProtocol: AnyObject {
    func step(_ uploader: ReliableUploader) async throws -> DeliveryStep
}

/// What one exchange came to.
enum DeliveryStep {
    /// Go on with the next step at once.
    case progressed
    /// Everything is delivered; this is the server's last answer.
    case finished(UploadResponse)
    /// A failure worth retrying after a backoff (5xx, 408, 429, or a protocol conflict).
    case retry(UploadResponse)
    /// An answer that ends the upload without retrying (a 4xx the request cannot survive).
    case stop(UploadResponse)

    /// `.retry` or `.stop`, by the retry policy's verdict on `answer`.
    static func failure(_ answer: UploadResponse, _ policy: RetryPolicy) -> DeliveryStep {
        policy.isRetryable(status: answer.statusCode) ? .retry(answer) : .stop(answer)
    }
}

/// Plain mode: each segment is a complete POST/PUT to the target carrying `Streamup-Stream-Id`
/// and `Streamup-Offset` (the stream offset of its first byte), so any HTTP server can take it
/// and a receiver that knows the headers can drop the duplicates a lost answer causes.
///
/// Thread safety: stateless.
final class PlainDelivery: DeliveryProtocol, Sendable {
    func step(_ uploader: ReliableUploader) async throws -> DeliveryStep {
        let offset = uploader.replay.acknowledgedOffset
        var configuration = uploader.configuration
        configuration.headers += [
            .init(name: "Streamup-Stream-Id", value: uploader.streamID),
            .init(name: "Streamup-Offset", value: String(offset)),
        ]
        let segment = try await uploader.sendSegment(configuration, from: offset)
        guard segment.answer.isSuccess else { return .failure(segment.answer, uploader.options.retry) }
        uploader.acknowledge(upTo: offset + segment.sent)
        return segment.reachedEnd ? .finished(segment.answer) : .progressed
    }
}
