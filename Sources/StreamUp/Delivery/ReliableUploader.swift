import Foundation
import Synchronization

/// Streams a producer's bytes as a series of chunked requests ("segments"), each acknowledged
/// by a 2xx, and sends again whatever a failed segment carried, so a network blink or a server
/// restart loses nothing.
///
/// Producers write into a bound pair as with ``StreamUploader`` and never see the segment
/// switches. A pump moves the bytes into a bounded ``ReplayBuffer``; each segment request reads
/// a window of it from the acknowledged offset, up to `segmentBytes` or `segmentDuration`.
/// Every request carries `Streamup-Stream-Id` and `Streamup-Offset` (the absolute offset of its
/// first byte), so a receiver can drop the duplicates that at-least-once delivery allows when
/// an answer is lost; `streamup sink` does. When the replay buffer is full, the pump stops and
/// the producer is paused: nothing is dropped.
///
/// Thread safety: `state` is guarded by a `Mutex`; every method may be called from any thread.
/// The pump runs on a thread of its own; requests run one at a time from `run`.
public final class ReliableUploader: Sendable {
    /// How the stream is cut and retried.
    public struct Options: Sendable {
        /// End a segment after this many bytes (default 8 MiB).
        public var segmentBytes = 8 << 20
        /// End a segment this long after its first byte (default 10 s), so quiet streams are
        /// acknowledged too.
        public var segmentDuration: Duration = .seconds(10)
        /// The most bytes held unacknowledged (default 64 MiB); the producer waits beyond it.
        public var replayCapacity = 64 << 20
        /// Which failures are retried, and how often.
        public var retry = RetryPolicy()
        /// Names the stream in `Streamup-Stream-Id`.
        public var streamID = UUID().uuidString.lowercased()
        public init() {}
    }

    /// Counters of a reliable upload.
    public struct Progress: Sendable, Equatable {
        /// Bytes the producer wrote.
        public var produced: Int
        /// Bytes the server acknowledged (2xx).
        public var acknowledged: Int
        /// Bytes held for a possible resend.
        public var held: Int
        /// Bytes sent more than once.
        public var resent: Int
        /// Failed requests that were retried.
        public var retries: Int
    }

    private struct State {
        var current: StreamUploader?
        var producer: Task<Void, Never>?
        var cancelled = false
        var resent = 0
        var retries = 0
        var highestSent = 0
    }

    public let configuration: UploadConfiguration
    public let options: Options
    private let onEvent: @Sendable (UploadEvent) -> Void
    private let onAcknowledged: @Sendable (Int) -> Void
    private let writer: StreamWriter
    private let input: StreamReference<BoundInputStream>
    private let replay: ReplayBuffer
    private let state = Mutex(State())

    /// - Parameter onAcknowledged: called with the stream offset up to which the receiver has
    ///   acknowledged the bytes, after each acknowledged segment (for checkpoints).
    public init(
        _ configuration: UploadConfiguration, options: Options = Options(),
        onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in },
        onAcknowledged: @escaping @Sendable (Int) -> Void = { _ in }
    ) throws {
        try configuration.validate()
        guard options.segmentBytes > 0, options.replayCapacity >= options.segmentBytes, options.segmentDuration > .zero else {
            throw StreamUpError(.invalidConfiguration, "segments need a positive size and duration, and the replay buffer must hold at least one segment")
        }
        self.configuration = configuration
        self.options = options
        self.onEvent = onEvent
        self.onAcknowledged = onAcknowledged
        let pair = BoundStreamPair(bufferSize: configuration.bufferSize)
        input = StreamReference(pair.input)
        writer = StreamWriter(output: pair.output)
        replay = ReplayBuffer(capacity: options.replayCapacity)
    }

    public var progress: Progress {
        state.withLock { state in
            Progress(produced: writer.bytesWritten, acknowledged: replay.acknowledgedOffset, held: replay.heldCount,
                     resent: state.resent, retries: state.retries)
        }
    }

    /// Runs `producer` and delivers all it writes; returns the last segment's answer.
    /// - Returns: a 2xx answer once everything is acknowledged, or the first answer that is
    ///   not retried (a 4xx other than 408/429, or the last one when retries ran out).
    /// - Throws: ``StreamUpError`` when retries ran out on transport failures, or on cancel.
    public func run(_ producer: some Producer) async throws -> UploadResponse {
        startPump()
        let producerTask = writer.start(producer)
        state.withLock { $0.producer = producerTask }
        defer {
            // Whatever ended the run, nothing more is read: wake the pump and the producer.
            writer.fail(StreamUpError(.bodyStreamClosed, "the upload has ended"))
            replay.close()
            producerTask.cancel()
        }
        return try await withTaskCancellationHandler {
            try await deliver()
        } onCancel: {
            cancel()
        }
    }

    /// Ends the stream gracefully: the producer stops, everything read so far is delivered.
    public func finish() {
        let producer = state.withLock { $0.producer }
        writer.finish()
        producer?.cancel()
    }

    /// Aborts: the current request is cancelled and `run` throws `.cancelled`.
    public func cancel() {
        let (current, producer) = state.withLock { state in
            state.cancelled = true
            return (state.current, state.producer)
        }
        writer.fail(StreamUpError(.cancelled, "the upload was cancelled"))
        replay.close()
        current?.cancel()
        producer?.cancel()
    }

    /// Moves bytes from the bound pair into the replay buffer, on a thread of its own.
    private func startPump() {
        let input = self.input
        let replay = self.replay
        input.value.open()
        let thread = Thread {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
            defer { buffer.deallocate() }
            while true {
                let count = input.value.read(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), maxLength: buffer.count)
                if count <= 0 || !replay.append(UnsafeRawBufferPointer(rebasing: buffer[..<count])) { break }
            }
            replay.markEnded()
        }
        thread.name = "streamup.replay-pump"
        thread.start()
    }

    private func deliver() async throws -> UploadResponse {
        var lastAnswer: UploadResponse?
        var failures = 0
        var failingSince: ContinuousClock.Instant?
        while true {
            if state.withLock({ $0.cancelled }) { throw StreamUpError(.cancelled, "the upload was cancelled") }
            let offset = replay.acknowledgedOffset
            let segment = SegmentProducer(replay: replay, offset: offset, maxBytes: options.segmentBytes, maxDuration: options.segmentDuration)
            var segmentConfiguration = configuration
            segmentConfiguration.headers += [
                .init(name: "Streamup-Stream-Id", value: options.streamID),
                .init(name: "Streamup-Offset", value: String(offset)),
            ]
            let uploader = try StreamUploader(segmentConfiguration, onEvent: onEvent)
            state.withLock { $0.current = uploader }
            var retryAfter: String?
            do {
                let answer = try await uploader.run(segment)
                let (sent, reachedEnd) = segment.outcome
                noteSent(from: offset, count: sent)
                if answer.isSuccess {
                    replay.acknowledge(upTo: offset + sent)
                    if sent > 0 { onAcknowledged(offset + sent) }
                    failures = 0
                    failingSince = nil
                    lastAnswer = answer
                    if reachedEnd && replay.acknowledgedOffset == replay.endOffset { return answer }
                    continue
                }
                guard options.retry.isRetryable(status: answer.statusCode) else { return answer }
                lastAnswer = answer
                retryAfter = answer.headers.first { $0.key.lowercased() == "retry-after" }?.value
            } catch let error as StreamUpError {
                noteSent(from: offset, count: segment.outcome.sent)
                guard options.retry.isRetryable(error), !state.withLock({ $0.cancelled }) else { throw error }
                lastAnswer = nil
                if try giveUp(failures: failures + 1, since: failingSince) { throw error }
            }
            failures += 1
            failingSince = failingSince ?? .now
            if let lastAnswer, try giveUp(failures: failures, since: failingSince) { return lastAnswer }
            state.withLock { $0.retries += 1 }
            try await Task.sleep(for: options.retry.delay(attempt: failures, retryAfter: retryAfter))
        }
    }

    private func giveUp(failures: Int, since: ContinuousClock.Instant?) throws -> Bool {
        if let maxRetries = options.retry.maxRetries, failures > maxRetries { return true }
        if let limit = options.retry.maxRetryTime, let since, ContinuousClock.now - since > limit { return true }
        return false
    }

    /// Counts bytes of a segment that had been sent before (a resend).
    private func noteSent(from offset: Int, count: Int) {
        state.withLock { state in
            let end = offset + count
            state.resent += max(0, min(end, state.highestSent) - offset)
            state.highestSent = max(state.highestSent, end)
        }
    }
}
