import Foundation
import Synchronization

/// Streams a producer's bytes as a series of chunked requests ("segments"), each acknowledged
/// by the server, and sends again whatever a failed segment carried, so a network blink or a
/// server restart loses nothing.
///
/// Producers write into a bound pair as with ``StreamUploader`` and never see the segment
/// switches. A pump moves the bytes into a bounded ``ReplayBuffer`` (in memory, or a spool on
/// disk that survives a restart); each segment request reads a window of it from the
/// acknowledged offset, up to `segmentBytes` or `segmentDuration`. How segments are sent is the
/// delivery protocol's business: plain requests (``PlainDelivery``, any HTTP server) or PATCHes
/// to one IETF resumable upload (``ResumableDelivery``). When the replay buffer is full, the pump
/// stops and the producer is paused: nothing is dropped.
///
/// Thread safety: `state` is guarded by a `Mutex`; every method may be called from any thread.
/// The pump runs on a thread of its own; requests run one at a time from `run`'s task.
public final class ReliableUploader: Sendable {
    /// How the stream is cut, kept and retried.
    public struct Options: Sendable {
        /// End a segment after this many bytes (default 8 MiB).
        public var segmentBytes = 8 << 20
        /// End a segment this long after its first byte (default 10 s), so quiet streams are
        /// acknowledged too.
        public var segmentDuration: Duration = .seconds(10)
        /// The most bytes held unacknowledged in memory (default 64 MiB); the producer waits
        /// beyond it. Not used with a spool.
        public var replayCapacity = 64 << 20
        /// Keep unacknowledged bytes in this directory instead of memory (see ``SpoolStorage``):
        /// they survive a crash, and the next run with the same spool sends them first.
        public var spoolDirectory: String?
        /// The most unacknowledged bytes the spool holds (default 1 GiB); the producer waits beyond it.
        public var spoolCapacity = 1 << 30
        /// Append to an IETF resumable upload (interop version 6) instead of sending each
        /// segment as a request of its own.
        public var resumable = false
        /// Which failures are retried, and how often.
        public var retry = RetryPolicy()
        /// Names the stream in `Streamup-Stream-Id` (a spool with pending bytes keeps its own).
        public var streamID = UUID().uuidString.lowercased()
        public init() {}
    }

    /// Counters of a reliable upload.
    public struct Progress: Sendable, Equatable {
        /// Bytes the producer wrote in this run.
        public var produced: Int
        /// Stream offset up to which the server acknowledged the bytes.
        public var acknowledged: Int
        /// Bytes held for a possible resend (in memory or in the spool).
        public var held: Int
        /// Bytes sent more than once.
        public var resent: Int
        /// Failed requests that were retried.
        public var retries: Int
        /// How often the producer was paused because the replay buffer was full.
        public var pauses: Int
        /// Seconds the producer spent paused.
        public var pausedSeconds: Double
    }

    /// The outcome of one segment request.
    struct SegmentResult {
        var answer: UploadResponse
        /// Body bytes the request carried.
        var sent: Int
        /// Whether the body reached the end of the source.
        var reachedEnd: Bool
    }

    private struct State {
        var current: StreamUploader?
        var producer: Task<Void, Never>?
        var cancelled = false
        var ended = false
        var resent = 0
        var retries = 0
        var highestSent = 0
    }

    public let configuration: UploadConfiguration
    public let options: Options
    /// The stream's name in `Streamup-Stream-Id`: the options' one, or the spool's when it
    /// still held bytes of an earlier run.
    public let streamID: String
    let onEvent: @Sendable (UploadEvent) -> Void
    private let onSecured: @Sendable (Int) -> Void
    private let writer: StreamWriter
    private let input: StreamReference<BoundInputStream>
    let replay: ReplayBuffer
    private let delivery: any DeliveryProtocol & Sendable
    /// The stream offset of the producer's first byte: 0, or after what a spool still held.
    public let producerStart: Int
    private let state = Mutex(State())
    /// The most producer bytes reported safe to `onSecured`.
    private let secured = Mutex(0)

    /// - Parameter onSecured: called with how many of the producer's bytes are safe: acknowledged
    ///   by the server, or, with a spool, written to it (for checkpoints such as `tail --state`).
    ///   With a spool it is called at most every 100 ms while bytes arrive.
    /// - Throws: ``StreamUpError`` when the options cannot work or the spool cannot be opened.
    public init(
        _ configuration: UploadConfiguration, options: Options = Options(),
        onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in },
        onSecured: @escaping @Sendable (Int) -> Void = { _ in }
    ) throws {
        try configuration.validate()
        let capacity = options.spoolDirectory == nil ? options.replayCapacity : options.spoolCapacity
        guard options.segmentBytes > 0, capacity >= options.segmentBytes, options.segmentDuration > .zero else {
            throw StreamUpError(.invalidConfiguration, "segments need a positive size and duration, and the replay buffer must hold at least one segment")
        }
        self.configuration = configuration
        self.options = options
        self.onEvent = onEvent
        self.onSecured = onSecured
        let pair = BoundStreamPair(bufferSize: configuration.bufferSize)
        input = StreamReference(pair.input)
        writer = StreamWriter(output: pair.output)
        if let directory = options.spoolDirectory {
            let spool = try SpoolStorage.open(directory: directory, capacity: options.spoolCapacity, streamID: options.streamID)
            let (start, end, record) = spool.recovered
            replay = ReplayBuffer(storage: spool, start: start, end: end)
            streamID = record.streamID
            producerStart = end
            // An upload made at another target is not this run's to continue.
            let upload = record.upload.flatMap { $0.target == configuration.url.absoluteString ? $0 : nil }
            delivery = options.resumable ? ResumableDelivery(resuming: upload, spool: spool) : PlainDelivery()
            state.withLock { $0.highestSent = start }
        } else {
            replay = ReplayBuffer(capacity: options.replayCapacity)
            streamID = options.streamID
            producerStart = 0
            delivery = options.resumable ? ResumableDelivery(resuming: nil, spool: nil) : PlainDelivery()
        }
    }

    public var progress: Progress {
        let pauses = replay.pauses
        return state.withLock { state in
            Progress(produced: writer.bytesWritten, acknowledged: replay.acknowledgedOffset, held: replay.heldCount,
                     resent: state.resent, retries: state.retries, pauses: pauses.count, pausedSeconds: pauses.seconds)
        }
    }

    /// Whether `run` has returned.
    var hasEnded: Bool { state.withLock { $0.ended } }

    /// Bytes an earlier run left in the spool that are not acknowledged yet (they go out before
    /// anything the producer writes).
    public var recoveredBytes: Int { max(0, producerStart - replay.acknowledgedOffset) }

    /// Runs `producer` and delivers all it writes; returns the server's last answer.
    /// - Returns: a 2xx answer once everything is acknowledged, or the first answer that is
    ///   not retried (a 4xx other than 408/429, or the last one when retries ran out).
    /// - Throws: ``StreamUpError`` when retries ran out on transport failures, on a spool
    ///   failure, on a resumable-protocol violation, or on cancel.
    public func run(_ producer: some Producer) async throws -> UploadResponse {
        let checkpoints = startPump()
        let producerTask = writer.start(producer)
        state.withLock { $0.producer = producerTask }
        defer {
            state.withLock { $0.ended = true }
            checkpoints?.cancel()
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

    /// Aborts: the current request is cancelled and `run` throws `.cancelled`. A spool keeps
    /// what was not acknowledged for the next run.
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

    /// Moves bytes from the bound pair into the replay buffer, on a thread of its own. With a
    /// spool, a timer reports what is on disk every 100 ms (checkpoints cost a synced file each,
    /// so not one per line).
    private func startPump() -> DispatchSourceTimer? {
        let input = self.input
        let replay = self.replay
        input.value.open()
        let thread = Thread { [self] in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
            defer { buffer.deallocate() }
            while true {
                let count = input.value.read(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), maxLength: buffer.count)
                if count <= 0 || !replay.append(UnsafeRawBufferPointer(rebasing: buffer[..<count])) { break }
            }
            if replay.isDurable && replay.failure == nil { reportSecured(replay.endOffset) }
            replay.markEnded()
        }
        thread.name = "streamup.replay-pump"
        thread.start()
        guard replay.isDurable else { return nil }
        let checkpoints = DispatchSource.makeTimerSource(queue: .global())
        checkpoints.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
        checkpoints.setEventHandler { [self] in reportSecured(replay.endOffset) }
        checkpoints.resume()
        return checkpoints
    }

    /// Tells `onSecured` that the stream up to `offset` is safe, if that is news. Calls come
    /// from the pump, the checkpoint timer and the delivery task; `secured` serialises them so
    /// that a checkpoint never goes backwards.
    private func reportSecured(_ offset: Int) {
        let produced = offset - producerStart
        secured.withLock { reported in
            guard produced > reported else { return }
            reported = produced
            onSecured(produced)
        }
    }

    // MARK: Delivery (called from the delivery protocols)

    /// The highest stream offset any request may have carried (an earlier run with the same
    /// spool may have sent all it left there).
    var highestSent: Int { max(state.withLock { $0.highestSent }, producerStart) }

    /// Sends one segment from `offset` with `configuration` and returns its answer. The request
    /// opens only once there is something to carry (a byte, or the end of the source): a quiet
    /// stream holds no idle request open, which servers cut after their body timeout.
    func sendSegment(_ configuration: UploadConfiguration, from offset: Int) async throws -> SegmentResult {
        await waitUntilReadable(from: offset)
        let segment = SegmentProducer(replay: replay, offset: offset, maxBytes: options.segmentBytes, maxDuration: options.segmentDuration)
        let uploader = try StreamUploader(configuration, onEvent: onEvent)
        state.withLock { $0.current = uploader }
        defer { noteSent(from: offset, count: segment.outcome.sent) }
        let answer = try await uploader.run(segment)
        let (sent, reachedEnd) = segment.outcome
        return SegmentResult(answer: answer, sent: sent, reachedEnd: reachedEnd)
    }

    /// Suspends until the replay buffer has something for a reader at `offset` (blocking a
    /// thread of its own, not the caller's: it may wait for hours on a quiet stream).
    private func waitUntilReadable(from offset: Int) async {
        let replay = self.replay
        guard !replay.isReadable(from: offset) else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                replay.waitUntilReadable(from: offset)
                continuation.resume()
            }
            thread.name = "streamup.segment-wait"
            thread.start()
        }
    }

    /// The server holds the stream up to `offset`: free it from the replay buffer.
    func acknowledge(upTo offset: Int) {
        replay.acknowledge(upTo: offset)
        reportSecured(replay.acknowledgedOffset)
    }

    private func deliver() async throws -> UploadResponse {
        var failures = 0
        var failingSince: ContinuousClock.Instant?
        while true {
            if state.withLock({ $0.cancelled }) { throw StreamUpError(.cancelled, "the upload was cancelled") }
            let acknowledgedBefore = replay.acknowledgedOffset
            var answer: UploadResponse?
            var failure: StreamUpError?
            do {
                switch try await delivery.step(self) {
                case .finished(let last), .stop(let last):
                    return last
                case .progressed:
                    // Only acknowledged bytes count as progress: a HEAD or a re-created upload
                    // between two failures does not reset the retry budget.
                    if replay.acknowledgedOffset > acknowledgedBefore {
                        failures = 0
                        failingSince = nil
                    }
                    continue
                case .retry(let failed):
                    answer = failed
                }
            } catch let error as StreamUpError {
                if let storageFailure = replay.failure { throw storageFailure }
                guard options.retry.isRetryable(error), !state.withLock({ $0.cancelled }) else { throw error }
                failure = error
            }
            failures += 1
            failingSince = failingSince ?? .now
            if giveUp(failures: failures, since: failingSince) {
                if let answer { return answer }
                throw failure!
            }
            state.withLock { $0.retries += 1 }
            let delay = options.retry.delay(attempt: failures, retryAfter: answer?.value(forHeader: "Retry-After"))
            onEvent(.retrying(reason: answer.map { "the server answered \($0.statusCode)" } ?? failure.map { "\($0)" } ?? "failed", delay: delay))
            try await Task.sleep(for: delay)
        }
    }

    private func giveUp(failures: Int, since: ContinuousClock.Instant?) -> Bool {
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
