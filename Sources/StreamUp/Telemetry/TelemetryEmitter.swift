import Foundation
import StreamUpSystem

/// An embedded telemetry stream: NDJSON records that any task or thread of an app emits,
/// delivered in acknowledged segments.
///
/// ```swift
/// let emitter = try TelemetryEmitter(url: URL(string: "https://telemetry.example/ingest")!)
/// try await emitter.emit(Reading(sensor: "t1", celsius: 21.5))         // waits while the buffer is full
/// let accepted = emitter.tryEmit(Reading(sensor: "t2", celsius: 19))  // never waits; false = dropped
/// try await emitter.finish(within: .seconds(5))                        // at shutdown
/// ```
///
/// Each record goes out as one line, whole, whatever the concurrency; dates are RFC 3339 in
/// UTC with milliseconds. The first record starts the upload; nothing is sent before it.
///
/// Delivery (``Delivery``): by default the records go out as acknowledged segments through a
/// ``StreamUploader`` with default options: a record reaches a receiver within about a
/// segment's time (1 s), a failed segment is sent again, and ``flush(within:)`` waits for
/// acknowledgements. ``Delivery/singleRequest`` sends one chunked request that lasts until
/// ``finish(within:)``, for the receivers that store a body while it streams.
///
/// Backpressure: the buffer holds `bufferSize` bytes of records while the server is slower
/// than the app. When it is full, `emit` and `send` wait (``WhenFull/wait``, the default) or
/// drop the record (``WhenFull/dropNewest``); `tryEmit` and `trySend` never wait and drop.
/// Dropped records are counted in ``metrics`` and reported through `onEvent` as a `.notice`,
/// at most once per 10 s. Events carry no secrets: credential header values are redacted.
///
/// `finish(within:)` lets writes in progress complete, ends the stream, tries a retry that is
/// waiting out its backoff at once, and returns the server's answer; an `emit` that starts
/// after it throws ``StreamUpError`` (`.bodyStreamClosed`). A task cancelled while waiting in
/// `emit` throws `CancellationError` and writes nothing.
///
/// Thread safety: every method may be called from any task or thread; writes are serialized
/// by a FIFO `WriterLock`, and the state is guarded by a `Mutex` (nothing is called out while
/// it is held).
public final class TelemetryEmitter: Sendable {
    /// How the records reach the server.
    ///
    /// Thread safety: a value type.
    public struct Delivery: Sendable {
        let options: StreamUploader.Options

        /// Acknowledged segments with `options` (the default, with default options): retries,
        /// an optional disk spool (`options.storage`), the resumable protocol. With memory
        /// storage the emitter's `bufferSize` is what is held (and the most a segment and a
        /// record may be); with a spool, records wait on disk, up to the spool's capacity.
        public static func segments(_ options: StreamUploader.Options = StreamUploader.Options()) -> Delivery {
            Delivery(options: options)
        }

        /// One chunked request that lasts until ``TelemetryEmitter/finish(within:)``: for
        /// receivers that store a body while it streams (VictoriaLogs, ClickHouse). A record is
        /// on the wire at once, but nothing is retried, and on Linux a body that waits for
        /// records holds URLSession's shared queue (see <doc:DesignNotes>).
        public static let singleRequest = Delivery(options: .singleRequest)
    }

    /// What `emit` and `send` do when the buffer is full. (`tryEmit` and `trySend` always drop
    /// the record they were given.)
    ///
    /// There is no "drop oldest": the oldest bytes in an acknowledged buffer may be on the
    /// wire in a segment that will be sent again after a failure, and a record cannot be taken
    /// out from under a request; dropping the newest keeps every request whole.
    ///
    /// Thread safety: a value type.
    public struct WhenFull: Sendable, Equatable {
        let drops: Bool

        /// Wait for space: a slow server slows the emitters (the default).
        public static let wait = WhenFull(drops: false)
        /// Drop the record being emitted, count it and report it: `emit` never waits.
        public static let dropNewest = WhenFull(drops: true)
    }

    /// Counters readable at any time.
    public struct Metrics: Sendable, Equatable {
        /// Records (or `send` payloads) written into the buffer.
        public var accepted: Int
        /// Records dropped because the buffer was full (or the emitter had finished).
        public var dropped: Int
        /// Bytes written into the buffer (heartbeats included).
        public var bytesProduced: Int
        /// Bytes handed to the connection (with segments: acknowledged by the server).
        public var bytesSent: Int
        /// Bytes waiting in the buffer.
        public var bytesBuffered: Int { bytesProduced - bytesSent }
    }

    private struct State {
        var accepted = 0
        var dropped = 0
        /// Drops since the last report, and when that report was made (clock time).
        var unreportedDrops = 0
        var lastDropReport: Duration?
        var run: Task<UploadResponse, Error>?
        /// `finish` has begun: no more writes.
        var finishing = false
        var heartbeat: Task<Void, Never>?
    }

    private let uploader: StreamUploader
    private let lock = WriterLock()
    private let state = Mutex(State())
    private let encoder: JSONEncoder
    private let whenFull: WhenFull
    private let clock: TelemetryClock
    private let dropReportInterval: Duration
    private let onEvent: @Sendable (UploadEvent) -> Void
    /// The longest record `emit` takes (segments in memory: the buffer's size).
    private let maxRecordBytes: Int
    private let bufferSize: Int

    /// Creates an emitter for `url` that sends NDJSON (`application/x-ndjson`); nothing is sent
    /// until the first record.
    /// - Parameters:
    ///   - url: where the records go.
    ///   - headers: extra request header fields (credentials never appear in events).
    ///   - bufferSize: bytes of records held in memory while the server is slower than the app,
    ///     with either delivery (with a spool, records wait on disk instead).
    ///   - delivery: acknowledged segments (default) or one request.
    ///   - whenFull: what `emit` does when the buffer is full (default: wait).
    ///   - onEvent: what happens to the upload, for logging (``UploadEvent``).
    /// - Throws: ``StreamUpError`` (`.invalidConfiguration`) when an option cannot work.
    public convenience init(
        url: URL, headers: [UploadConfiguration.Header] = [], bufferSize: Int = 256 * 1024,
        delivery: Delivery = .segments(), whenFull: WhenFull = .wait,
        onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }
    ) throws {
        var configuration = UploadConfiguration(url: url)
        configuration.contentType = "application/x-ndjson"
        configuration.headers = headers
        configuration.bufferSize = bufferSize
        try self.init(configuration, delivery: delivery, whenFull: whenFull, onEvent: onEvent)
    }

    /// Creates an emitter with the request `configuration` (method, content type, headers,
    /// response timeout, gzip, and ``UploadConfiguration/bufferSize``: the bytes of records
    /// held in memory, with either delivery); nothing is sent until the first record.
    /// - Throws: ``StreamUpError`` (`.invalidConfiguration`) when an option cannot work (a
    ///   gzip level zlib refuses, a zero buffer), or when a spool cannot be opened.
    public convenience init(
        _ configuration: UploadConfiguration, delivery: Delivery = .segments(), whenFull: WhenFull = .wait,
        onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }
    ) throws {
        try self.init(configuration, delivery: delivery, whenFull: whenFull, clock: ContinuousClock(), onEvent: onEvent)
    }

    /// An emitter whose deadlines, heartbeat and drop reports run on `clock` (tests).
    package init<C: Clock>(
        _ configuration: UploadConfiguration, delivery: Delivery, whenFull: WhenFull = .wait, clock: C,
        dropReportInterval: Duration = .seconds(10), onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }
    ) throws where C.Duration == Duration {
        try configuration.validate()
        var options = delivery.options
        if case .memory = options.storage {
            // One meaning for the buffer's size: what is held in memory, in either mode.
            options.storage = .memory(capacity: configuration.bufferSize)
            options.segmentBytes = min(options.segmentBytes, max(1, configuration.bufferSize / 2))
            options.maxRecordBytes = min(options.maxRecordBytes, configuration.bufferSize)
        }
        uploader = try StreamUploader(configuration, options: options, onEvent: onEvent)
        // One request carries bytes, not records: any record fits.
        maxRecordBytes = options.delivery == .singleRequest ? .max : options.maxRecordBytes
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(RFC3339.string(from: date))
        }
        self.encoder = encoder
        self.whenFull = whenFull
        self.clock = TelemetryClock(clock)
        self.dropReportInterval = dropReportInterval
        self.onEvent = onEvent
        self.bufferSize = configuration.bufferSize
        // What an earlier run left in the spool goes out without waiting for a new record.
        if uploader.recoveredBytes > 0 { startRun() }
    }

    // MARK: Writing

    /// Encodes `value` as one JSON line and writes it; when the buffer is full, waits
    /// (``WhenFull/wait``) or drops it (``WhenFull/dropNewest``).
    /// - Throws: ``StreamUpError`` when the upload has ended or failed, or when the record is
    ///   longer than a segment may be; `CancellationError` when cancelled while waiting.
    public func emit(_ value: some Encodable) async throws {
        try await send(try line(for: value))
    }

    /// Encodes `value` as one JSON line and writes it if it fits now; returns whether it did.
    /// A record that does not fit is dropped, counted and reported; it never waits.
    @discardableResult
    public func tryEmit(_ value: some Encodable) -> Bool {
        guard let line = try? line(for: value) else { return false }
        return trySend(line)
    }

    /// Writes `bytes` as they are (add the newline yourself); when the buffer is full, waits
    /// (``WhenFull/wait``) or drops them (``WhenFull/dropNewest``).
    public func send(_ bytes: [UInt8]) async throws {
        try await lock.lock()
        defer { lock.unlock() }
        try checkOpen()
        startRun()
        if whenFull.drops {
            return record(written: try writeIfSpace(bytes))
        }
        try await uploader.bufferWriter.write(bytes)
        record(written: true)
    }

    /// Writes `bytes` if they fit now; returns whether they did. Never waits: a record that
    /// does not fit (or meets another writer mid-record) is dropped, counted and reported.
    @discardableResult
    public func trySend(_ bytes: [UInt8]) -> Bool {
        guard lock.tryLock() else {
            noteDrop()
            return false
        }
        defer { lock.unlock() }
        let written = isOpen && ((try? writeIfSpace(bytes)) ?? false)
        if written { startRun() }
        record(written: written)
        return written
    }

    private func writeIfSpace(_ bytes: [UInt8]) throws -> Bool {
        try bytes.withUnsafeBytes { try uploader.bufferWriter.writeIfSpace($0) }
    }

    private func record(written: Bool) {
        if written {
            state.withLock { $0.accepted += 1 }
        } else {
            noteDrop()
        }
    }

    private var isOpen: Bool { state.withLock { !$0.finishing } }

    private func checkOpen() throws {
        guard isOpen else { throw StreamUpError(.bodyStreamClosed, "the telemetry emitter has finished") }
    }

    /// Starts the upload if it has not started: the first record does it.
    private func startRun() {
        state.withLock { state in
            guard state.run == nil else { return }
            state.run = Task { [uploader] in try await uploader.run(HeldOpen()) }
        }
    }

    // MARK: Drops

    /// Counts a dropped record, and reports the drops since the last report if that was at
    /// least `dropReportInterval` ago.
    private func noteDrop() {
        let now = clock.elapsed()
        let report = state.withLock { state -> (count: Int, total: Int, first: Bool)? in
            state.dropped += 1
            state.unreportedDrops += 1
            let first = state.lastDropReport == nil
            if let last = state.lastDropReport, now - last < dropReportInterval { return nil }
            state.lastDropReport = now
            defer { state.unreportedDrops = 0 }
            return (state.unreportedDrops, state.dropped, first)
        }
        if let report { reportDrops(report.count, total: report.total, first: report.first) }
    }

    /// Reports the drops not reported yet (at finish).
    private func reportRemainingDrops() {
        let report = state.withLock { state -> (count: Int, total: Int)? in
            guard state.unreportedDrops > 0 else { return nil }
            defer { state.unreportedDrops = 0 }
            return (state.unreportedDrops, state.dropped)
        }
        if let report { reportDrops(report.count, total: report.total, first: false) }
    }

    private func reportDrops(_ count: Int, total: Int, first: Bool) {
        let records = count == 1 ? "1 record" : "\(count) records"
        let since = first ? "" : " since the last report"
        let pace = first ? "; drops are reported at most every \(dropReportInterval)" : ""
        onEvent(.notice("the telemetry buffer (\(bufferSize) bytes) was full: \(records) dropped\(since), \(total) in all\(pace)"))
    }

    // MARK: Heartbeat

    /// Adds a heartbeat record to this emitter's stream every `interval`, at once first: `ts`,
    /// `seq`, `host`, `pid`, `uptime_s`, `skipped`, then `fields` (the records of a
    /// `HeartbeatProducer`). A beat that does not fit in the buffer is skipped, and the next
    /// record says how many were (`skipped`). It stops at ``finish(within:)`` or ``cancel()``,
    /// or when this is called again (the new heartbeat replaces it).
    /// - Parameters:
    ///   - interval: time between beats, on the emitter's clock (positive).
    ///   - fields: extra string fields on every beat, in order (e.g. `("job", "nightly")`).
    public func startHeartbeat(every interval: Duration, fields: [(name: String, value: String)] = []) {
        precondition(interval > .zero, "a heartbeat interval must be positive")
        let records = HeartbeatRecord(fields: fields)
        let beats = Task { [self, clock] in
            let start = clock.elapsed()
            var (tick, sent, skipped) = (0, 0, 0)
            while true {
                if tick > 0 {
                    do { try await clock.sleep(start + interval * tick) } catch { return }
                }
                tick += 1
                if writeBeat(records.bytes(seq: sent + 1, skipped: skipped)) {
                    sent += 1
                    skipped = 0
                } else {
                    skipped += 1
                }
            }
        }
        let replaced = state.withLock { state -> Task<Void, Never>? in
            defer { state.heartbeat = beats }
            return state.heartbeat
        }
        replaced?.cancel()
    }

    /// Writes one heartbeat record if it fits now; not counted as an app record.
    private func writeBeat(_ bytes: [UInt8]) -> Bool {
        guard lock.tryLock() else { return false }
        defer { lock.unlock() }
        guard isOpen, (try? writeIfSpace(bytes)) == true else { return false }
        startRun()
        return true
    }

    private func stopHeartbeat() {
        state.withLock { $0.heartbeat }?.cancel()
    }

    // MARK: Flush, finish, cancel

    /// Returns once every byte written before the call has been handed to the connection
    /// (with segments: acknowledged by the server). A retry waiting out its backoff is tried
    /// at once.
    /// - Parameter timeout: throw ``StreamUpError`` (`.timedOut`) if that has not happened
    ///   within this long (nil: wait as long as it takes).
    /// - Throws: ``StreamUpError`` when the upload ended (or failed) before that, or at the
    ///   deadline.
    public func flush(within timeout: Duration? = nil) async throws {
        let target = uploader.bytesProduced
        uploader.retryNow()
        let wait: @Sendable () async throws -> Void = { [uploader] in
            await uploader.waitUntilDelivered(target)
            if uploader.bytesDelivered < target {
                throw StreamUpError(.bodyStreamClosed, "the upload ended before the flush completed")
            }
        }
        guard let timeout else { return try await wait() }
        try await clock.deadline(timeout, "the flush did not complete within \(timeout)", wait)
    }

    /// Ends the stream after what was emitted so far (writes already in progress included),
    /// tries a retry that waits out its backoff at once, and returns the server's (last) answer.
    /// With nothing emitted (and nothing left in a spool) it sends nothing and returns nil.
    /// - Parameter timeout: at this deadline, cancel the upload and throw ``StreamUpError``
    ///   (`.timedOut`) saying how many bytes were not delivered (a spool keeps them for the
    ///   next run); nil: wait as long as delivery takes (the retry policy decides).
    /// - Throws: ``StreamUpError`` when the upload failed, was cancelled, or timed out.
    @discardableResult
    public func finish(within timeout: Duration? = nil) async throws -> UploadResponse? {
        stopHeartbeat()
        let finishing: @Sendable () async throws -> UploadResponse? = { [self] in
            // Taking the writer lock lets writes in progress complete first.
            try await lock.lock()
            let run = state.withLock { state in
                state.finishing = true
                return state.run
            }
            lock.unlock()
            reportRemainingDrops()
            guard let run else { return nil }
            guard uploader.bytesProduced > 0 || uploader.recoveredBytes > 0 else {
                // Started by a record that was then not written: there is nothing to send.
                uploader.cancel()
                return nil
            }
            uploader.finish()
            uploader.retryNow()
            return try await run.value
        }
        guard let timeout else { return try await finishing() }
        return try await clock.deadline(
            timeout, "the telemetry upload did not finish within \(timeout)",
            onTimeout: { [uploader] in
                uploader.cancel()
            }, finishing)
    }

    /// Aborts the upload; `finish` then throws `.cancelled`. A spool keeps what was not
    /// acknowledged for the next run.
    public func cancel() {
        stopHeartbeat()
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
        guard bytes.count <= maxRecordBytes else {
            throw StreamUpError(
                .invalidConfiguration,
                "a record of \(bytes.count) bytes is longer than a segment may be (\(maxRecordBytes) bytes: the emitter's buffer size); it was not sent")
        }
        return bytes
    }
}

/// The producer behind a ``TelemetryEmitter``: the emitter writes into the uploader's writer
/// itself, so this only keeps the stream open until the uploader ends it (`finish` or
/// `cancel` cancel the producer's task).
///
/// Thread safety: stateless.
private struct HeldOpen: Producer {
    func produce(into writer: StreamWriter) async throws {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(3600))
        }
    }
}
