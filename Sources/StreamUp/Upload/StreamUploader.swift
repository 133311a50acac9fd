import Foundation
import StreamUpSystem

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Streams what a ``Producer`` writes to an HTTP endpoint as one chunked request, for as long as
/// the producer runs, and returns the server's answer.
///
/// Each uploader owns one `URLSession` (its serial work queue blocks while the body waits for
/// bytes, DesignNotes, platform fact 3), one `BoundStreamPair` and one upload task. The producer writes
/// into the pair's output only when it has space; the task reads the input side.
///
/// ```swift
/// let uploader = try StreamUploader(UploadConfiguration(url: url))
/// let response = try await uploader.run(FileDescriptorProducer(fileDescriptor: 0))
/// ```
///
/// Thread safety: `state` is guarded by a `Mutex`; every method may be called from any thread.
/// URLSession callbacks run on the session's own delegate queue (in `UploadTaskDelegate`).
public final class StreamUploader: Sendable {
    /// Where an uploader is in its life.
    public enum Phase: Sendable, Equatable {
        case idle, streaming, finishing, finished
    }

    private struct State {
        var phase: Phase = .idle
        var session: URLSession?
        var task: URLSessionUploadTask?
        var producer: Task<Void, Never>?
        var cancelled = false
    }

    /// What is sent and where.
    public let configuration: UploadConfiguration
    let writer: StreamWriter
    private let input: StreamReference<BoundInputStream>
    private let onEvent: @Sendable (UploadEvent) -> Void
    private let state = Mutex(State())

    /// Creates an uploader; nothing is sent until ``run(_:)``.
    /// - Throws: ``StreamUpError`` when the configuration cannot work.
    public init(_ configuration: UploadConfiguration, onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }) throws {
        try configuration.validate()
        self.configuration = configuration
        self.onEvent = { onEvent($0.redacted) }
        let pair = BoundStreamPair(bufferSize: configuration.bufferSize)
        input = StreamReference(pair.input)
        writer = StreamWriter(output: pair.output)
    }

    /// Where the upload is now.
    public var phase: Phase { state.withLock { $0.phase } }

    /// Suspends until `count` bytes have been handed to the connection (or the upload ended).
    func waitUntilSent(_ count: Int) async {
        await input.value.core.waitUntilRead(count)
    }

    /// Bytes produced and sent so far.
    public var progress: Progress {
        UploadProgress(bytesProduced: input.value.core.bytesWritten, bytesSent: input.value.core.bytesRead)
    }

    /// Starts the request, runs `producer` until its source ends, ends the body and returns the
    /// server's answer. Call it once.
    ///
    /// - Returns: the answer, whatever its status (check ``UploadResponse/isSuccess``).
    /// - Throws: ``StreamUpError`` when no answer came: transport failure, cancellation, or the
    ///   producer's own failure (code `.producerFailed`).
    public func run(_ producer: some Producer) async throws -> UploadResponse {
        let delegate = UploadTaskDelegate(
            body: BoundStreamBody(input.value, encoding: configuration.body), maxResponseBodyBytes: configuration.maxResponseBodyBytes, onEvent: onEvent)
        guard
            state.withLock({ state -> Bool in
                guard state.phase == .idle, !state.cancelled else { return false }
                state.phase = .streaming
                return true
            })
        else {
            throw StreamUpError(.invalidConfiguration, "an uploader runs once; create a new one")
        }
        // Outside the lock: creating a task waits for URLSession's shared work queue, which
        // another uploader's body read may be holding (see StreamUp.docc/DesignNotes.md).
        let resolved: UploadConfiguration
        do {
            resolved = try configuration.resolvingHeaders()
        } catch {
            state.withLock { $0.phase = .finished }
            throw error
        }
        let request = Self.makeRequest(resolved)
        let session = Self.makeSession(configuration, delegate: delegate)
        let task = session.uploadTask(withStreamedRequest: request)
        let producerTask = writer.start(producer)
        let cancelledMeanwhile = state.withLock { state in
            state.session = session
            state.task = task
            state.producer = producerTask
            return state.cancelled
        }
        // The fields as sent, the header provider's (credentials) included.
        onEvent(
            .requestStarted(
                method: configuration.method, url: configuration.url,
                headers: Self.headerFields(resolved) + [.init(name: "Transfer-Encoding", value: "chunked")]))
        task.resume()
        if cancelledMeanwhile { cancel() }

        let outcome = await withTaskCancellationHandler {
            await delegate.outcome()
        } onCancel: {
            self.cancel()
        }
        let (producer, finishedSession) = state.withLock { state in
            state.phase = .finished
            defer { state.session = nil }
            return (state.producer, state.session)
        }
        finishedSession?.finishTasksAndInvalidate()
        // The answer is in: a producer still writing has nowhere to write to.
        writer.fail(StreamUpError(.bodyStreamClosed, "the server answered before the body ended"))
        producer?.cancel()
        return try outcome.get()
    }

    /// Ends the body gracefully: the producer is stopped, what is buffered is sent, the chunked
    /// body is ended, and ``run(_:)`` returns the server's answer.
    public func finish() {
        let producer: Task<Void, Never>? = state.withLock { state in
            if state.phase == .streaming { state.phase = .finishing }
            return state.producer
        }
        writer.finish()
        producer?.cancel()
    }

    /// Aborts the upload: wakes the body reader, cancels the task; ``run(_:)`` throws
    /// ``StreamUpError`` with code `.cancelled`.
    public func cancel() {
        let (task, producer) = state.withLock { state in
            state.cancelled = true
            return (state.task, state.producer)
        }
        // Wake a read that waits for bytes first: the task's cancel runs on the session's work
        // queue, which that read is blocking.
        writer.fail(StreamUpError(.cancelled, "the upload was cancelled"))
        producer?.cancel()
        // `URLSessionTask.cancel()` waits for URLSession's shared work queue; never make the
        // caller wait for it.
        task.map { TaskReference($0) }?.cancelSoon()
    }

    // MARK: Building the session and request

    static func makeSession(_ configuration: UploadConfiguration, delegate: URLSessionDelegate) -> URLSession {
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.timeoutIntervalForRequest = configuration.responseTimeout.seconds
        // A stream may run for days: no overall limit.
        sessionConfiguration.timeoutIntervalForResource = 365 * 24 * 3600
        sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        sessionConfiguration.urlCache = nil
        sessionConfiguration.httpCookieStorage = nil
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "streamup.upload.delegate"
        return URLSession(configuration: sessionConfiguration, delegate: delegate, delegateQueue: queue)
    }

    static func makeRequest(_ configuration: UploadConfiguration) -> URLRequest {
        var request = URLRequest(url: SessionURL.forURLSession(configuration.url) ?? configuration.url)
        request.httpMethod = configuration.method
        request.timeoutInterval = configuration.responseTimeout.seconds
        for header in headerFields(configuration) {
            request.setValue(header.value, forHTTPHeaderField: header.name)
        }
        return request
    }

    /// The fields streamup sets, then the caller's (which may replace them).
    static func headerFields(_ configuration: UploadConfiguration) -> [UploadConfiguration.Header] {
        var fields = [
            UploadConfiguration.Header(name: "Content-Type", value: configuration.contentType),
            // An empty Expect keeps libcurl from adding `Expect: 100-continue` and waiting a
            // second for a `100 Continue` before the first byte (DesignNotes, platform fact 5).
            UploadConfiguration.Header(name: "Expect", value: ""),
            UploadConfiguration.Header(name: "User-Agent", value: "streamup/\(StreamUpVersion.current)"),
        ]
        if configuration.body.gzip { fields.append(UploadConfiguration.Header(name: "Content-Encoding", value: "gzip")) }
        for header in configuration.headers {
            fields.removeAll { $0.name.caseInsensitiveCompare(header.name) == .orderedSame }
        }
        return fields + configuration.headers
    }
}
