import Foundation
import StreamUpSystem

/// An embedded telemetry stream: one long NDJSON upload that any task or thread of an app
/// can emit records into.
///
/// ```swift
/// let emitter = try TelemetryEmitter(url: URL(string: "https://telemetry.example/ingest")!)
/// emitter.start()
/// try await emitter.emit(Reading(sensor: "t1", celsius: 21.5))   // waits while the buffer is full
/// let accepted = emitter.tryEmit(Reading(sensor: "t2", celsius: 19)) // never waits; false = dropped
/// let response = try await emitter.finish()
/// ```
///
/// Each record goes out as one line, whole, whatever the concurrency. Backpressure: `emit` and
/// `send` suspend while the buffer is full (a slow server slows the emitters); `tryEmit` and
/// `trySend` never wait, and a record that does not fit now is dropped and counted in
/// ``metrics``. Memory is the fixed buffer plus the records being encoded.
///
/// With `delivery` options the records go out as acknowledged segments through a
/// ``ReliableUploader`` (retries, an optional disk spool, the resumable protocol): nothing is
/// lost when the network or the server fails, and `flush()` waits for acknowledgements.
///
/// `finish()` lets writes in progress complete, ends the body and returns the server's answer;
/// an `emit` that starts after it throws ``StreamUpError`` (`.bodyStreamClosed`). A task
/// cancelled while waiting in `emit` throws `CancellationError` and writes nothing.
///
/// Thread safety: every method may be called from any task or thread; writes are serialized
/// by a FIFO `WriterLock`, and the state is guarded by a `Mutex`.
public final class TelemetryEmitter: Sendable {
    /// Counters readable at any time.
    public struct Metrics: Sendable, Equatable {
        /// Records (or `send` payloads) written into the buffer.
        public var accepted: Int
        /// Records refused by `tryEmit`/`trySend` because the buffer was full.
        public var dropped: Int
        /// Bytes written into the buffer.
        public var bytesProduced: Int
        /// Bytes handed to the connection (with reliable delivery: acknowledged by the server).
        public var bytesSent: Int
        /// Bytes waiting in the buffer.
        public var bytesBuffered: Int { bytesProduced - bytesSent }
    }

    private struct State {
        var accepted = 0
        var dropped = 0
        var run: Task<UploadResponse, Error>?
    }

    private let uploader: any UploadRunning
    private let channel = PushChannel()
    private let lock = WriterLock()
    private let state = Mutex(State())
    private let encoder: JSONEncoder

    /// Creates an emitter for `url` that sends NDJSON (`application/x-ndjson`); nothing is sent
    /// until ``start()``.
    /// - Parameters:
    ///   - url: where the records go.
    ///   - headers: extra request header fields.
    ///   - bufferSize: bytes of records held while the server is slower than the app.
    ///   - delivery: send in acknowledged segments with these options (nil: one request).
    ///   - onEvent: what happens to the upload, for logging (``UploadEvent``).
    public convenience init(
        url: URL, headers: [UploadConfiguration.Header] = [], bufferSize: Int = 256 * 1024,
        delivery: ReliableUploader.Options? = nil,
        onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }
    ) throws {
        var configuration = UploadConfiguration(url: url)
        configuration.contentType = "application/x-ndjson"
        configuration.headers = headers
        configuration.bufferSize = bufferSize
        try self.init(configuration, delivery: delivery, onEvent: onEvent)
    }

    /// Creates an emitter with the request `configuration` (method, content type, headers,
    /// response timeout, gzip, buffer size), as ``StreamUploader`` and ``ReliableUploader``
    /// take it; nothing is sent until ``start()``.
    /// - Parameters:
    ///   - configuration: the request: URL, method, content type, headers, timeout, gzip.
    ///   - delivery: send in acknowledged segments with these options (nil: one request).
    ///   - onEvent: what happens to the upload, for logging (``UploadEvent``).
    public init(
        _ configuration: UploadConfiguration, delivery: ReliableUploader.Options? = nil,
        onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }
    ) throws {
        if let delivery {
            uploader = try ReliableUploader(configuration, options: delivery, onEvent: onEvent)
        } else {
            uploader = try StreamUploader(configuration, onEvent: onEvent)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        self.encoder = encoder
    }

    /// Starts the upload in the background (the first `emit` or `send` also does).
    public func start() {
        state.withLock { state in
            guard state.run == nil else { return }
            state.run = Task { [uploader, channel] in
                // However the upload ends, callers still waiting for the writer must not hang.
                defer { channel.close() }
                return try await uploader.run(channel)
            }
        }
    }

    /// Encodes `value` as one JSON line and writes it, suspending while the buffer is full.
    public func emit(_ value: some Encodable) async throws {
        try await send(try line(for: value))
    }

    /// Encodes `value` as one JSON line and writes it if it fits now; returns whether it did.
    /// A record that does not fit is dropped and counted; it never waits.
    @discardableResult
    public func tryEmit(_ value: some Encodable) -> Bool {
        guard let line = try? line(for: value) else { return false }
        return trySend(line)
    }

    /// Writes `bytes` as they are (add the newline yourself), suspending while the buffer is full.
    public func send(_ bytes: [UInt8]) async throws {
        start()
        guard let writer = await channel.writer() else {
            throw StreamUpError(.bodyStreamClosed, "the telemetry upload has ended")
        }
        try await lock.lock()
        defer { lock.unlock() }
        try await writer.write(bytes)
        state.withLock { $0.accepted += 1 }
    }

    /// Writes `bytes` if they fit now; returns whether they did. Never waits.
    @discardableResult
    public func trySend(_ bytes: [UInt8]) -> Bool {
        guard let writer = channel.writerIfReady(), lock.tryLock() else {
            state.withLock { $0.dropped += 1 }
            return false
        }
        defer { lock.unlock() }
        let written = (try? bytes.withUnsafeBytes { try writer.writeIfSpace($0) }) ?? false
        state.withLock { written ? ($0.accepted += 1) : ($0.dropped += 1) }
        return written
    }

    /// Returns once every byte written before the call has been handed to the connection.
    /// With reliable delivery: once the server has acknowledged them.
    /// - Throws: ``StreamUpError`` when the upload ended (or failed) before that.
    public func flush() async throws {
        let target = uploader.bytesProduced
        await uploader.waitUntilDelivered(target)
        if uploader.bytesDelivered < target {
            throw StreamUpError(.bodyStreamClosed, "the upload ended before the flush completed")
        }
    }

    /// Ends the body after what was emitted so far (including writes already in progress)
    /// and returns the server's answer.
    public func finish() async throws -> UploadResponse {
        start()
        // Taking the writer lock lets writes in progress complete first.
        try await lock.lock()
        channel.finish()
        lock.unlock()
        let run = state.withLock { $0.run }!
        return try await run.value
    }

    /// Aborts the upload; `finish()` then throws `.cancelled`.
    public func cancel() {
        uploader.cancel()
    }

    /// Counters so far.
    public var metrics: Metrics {
        let (produced, delivered) = (uploader.bytesProduced, uploader.bytesDelivered)
        return state.withLock { state in
            Metrics(accepted: state.accepted, dropped: state.dropped, bytesProduced: produced, bytesSent: delivered)
        }
    }

    private func line(for value: some Encodable) throws -> [UInt8] {
        var bytes = [UInt8](try encoder.encode(value))
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }
}
