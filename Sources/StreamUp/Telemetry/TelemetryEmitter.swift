import Foundation
import StreamUpSystem

/// An embedded telemetry stream: NDJSON records that any task or thread of an app emits,
/// delivered in acknowledged segments.
///
/// ```swift
/// let emitter = try TelemetryEmitter(url: URL(string: "https://telemetry.example/ingest")!)
/// try await emitter.emit(Reading(sensor: "t1", celsius: 21.5))         // never waits for the server
/// let accepted = emitter.tryEmit(Reading(sensor: "t2", celsius: 19))  // false = dropped
/// try await emitter.finish(within: .seconds(5))                        // at shutdown
/// ```
///
/// Each record goes out as one line, whole, whatever the concurrency; dates are RFC 3339 in
/// UTC with milliseconds. The first record starts the upload; nothing is sent before it.
///
/// Delivery (``Delivery``): the records go out as acknowledged segments through a
/// ``StreamUploader``: a record reaches a receiver within about a segment's time (1 s), a
/// failed segment is sent again, and ``flush(within:)`` waits for acknowledgements. Segments are
/// complete bodies, so nothing the emitter does ever waits inside URLSession, where the app's
/// own requests would wait behind it (see <doc:DesignNotes>).
///
/// Outages: the emitter keeps trying for as long as the app runs, with a backoff capped at 30 s,
/// unless the delivery's retry policy sets a limit; when it does stop (a limit reached, or an
/// answer no retry can fix, such as a 401), it says so once with a ``UploadEvent/Kind/gaveUp``
/// event, and from then on `emit` throws and `tryEmit` drops.
///
/// Backpressure: the buffer holds `bufferSize` bytes of records while the server is slower
/// than the app or down. An app's logging call never waits for the server: when the buffer is
/// full, `emit` and `send` drop the record at once (``WhenFull/dropNewest``, the default) or wait
/// for space at most the time the app chose (``WhenFull/wait(atMost:)``), then drop it;
/// `tryEmit` and `trySend` never wait. Dropped records are counted in ``metrics`` and reported
/// through `onEvent` as a `.notice` that says why they were dropped, at most once per 10 s.
/// Events carry no secrets: credential header values are redacted.
///
/// `finish(within:)` lets the writes in line complete, ends the stream, tries a retry that is
/// waiting out its backoff at once, and returns the server's answer; an `emit` that starts
/// after it throws ``StreamUpError`` (`.bodyStreamClosed`). A task cancelled while waiting in
/// `emit` throws `CancellationError` and writes nothing.
///
/// Thread safety: every method may be called from any task or thread; records are written
/// through the uploader's ``StreamWriter``, which keeps each whole and in the order of arrival,
/// and the counters are guarded by a `Mutex` (nothing is called out while it is held).
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
        ///
        /// The emitter retries for the life of the app unless `options.retry` sets a limit: the
        /// uploader's default of 10 retries (with no `maxRetryTime`), meant for a command that
        /// ends, is taken as no limit. One live request (``StreamUploader/SegmentDelivery/singleRequest``)
        /// is refused: its body waits inside URLSession and stalls the app's other requests.
        public static func segments(_ options: StreamUploader.Options = StreamUploader.Options()) -> Delivery {
            Delivery(options: options)
        }
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
        /// The longest `emit` waits for space (zero: it never waits).
        let patience: Duration

        /// Drop the record being emitted, count it and report it: `emit` never waits (the default).
        public static let dropNewest = WhenFull(patience: .zero)

        /// Wait for space at most `bound` (on the emitter's clock), in line behind the records
        /// emitted before; then drop the record, count it and report it. A record is written
        /// whole or not at all.
        public static func wait(atMost bound: Duration) -> WhenFull {
            precondition(bound >= .zero, "a wait bound cannot be negative")
            return WhenFull(patience: bound)
        }
    }

    /// Counters readable at any time.
    public struct Metrics: Sendable, Equatable {
        /// Records (or `send` payloads) written into the buffer.
        public var accepted: Int
        /// Records dropped because the buffer was full (or the emitter had finished).
        public var dropped: Int
        /// Bytes written into the buffer (heartbeats included).
        public var bytesProduced: Int
        /// Bytes the server acknowledged.
        public var bytesSent: Int
        /// Bytes waiting in the buffer.
        public var bytesBuffered: Int { bytesProduced - bytesSent }
    }

    /// Why a record was dropped, as the drop report says it.
    ///
    /// Thread safety: a value type.
    private enum DropCause: Hashable, Comparable {
        /// The buffer had no room for it.
        case full
        /// The buffer had no room for it within the wait the app allows.
        case fullTooLong
        /// It fit, but another write held the buffer's turn (it waits for space).
        case busy
        /// The record could not be encoded, or is longer than a segment may be.
        case unwritable
        /// The emitter had finished (or was cancelled).
        case finished
        /// The upload had stopped for good.
        case gaveUp
    }

    private struct State {
        var accepted = 0
        var dropped = 0
        /// Drops since the last report by cause, and when that report was made (clock time).
        var unreportedDrops: [DropCause: Int] = [:]
        var lastDropReport: Duration?
        var run: Task<UploadResponse, Error>?
        /// `finish` has begun: no more writes.
        var finishing = false
        /// Why the upload stopped on its own (retries ran out, a final answer); nil while it runs.
        var gaveUp: String?
        var heartbeat: Task<Void, Never>?
    }

    private let uploader: StreamUploader
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
    ///   - bufferSize: bytes of records held in memory while the server is slower than the app
    ///     (with a spool, records wait on disk instead).
    ///   - delivery: acknowledged segments, with their options.
    ///   - whenFull: what `emit` does when the buffer is full (default: drop the record).
    ///   - onEvent: what happens to the upload, for logging (``UploadEvent``).
    /// - Throws: ``StreamUpError`` (`.invalidConfiguration`) when an option cannot work.
    public convenience init(
        url: URL, headers: [UploadConfiguration.Header] = [], bufferSize: Int = 256 * 1024,
        delivery: Delivery = .segments(), whenFull: WhenFull = .dropNewest,
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
    /// held in memory); nothing is sent until the first record.
    /// - Throws: ``StreamUpError`` (`.invalidConfiguration`) when an option cannot work (a
    ///   gzip level zlib refuses, a zero buffer, one live request), or when a spool cannot be
    ///   opened.
    public convenience init(
        _ configuration: UploadConfiguration, delivery: Delivery = .segments(), whenFull: WhenFull = .dropNewest,
        onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }
    ) throws {
        try self.init(configuration, delivery: delivery, whenFull: whenFull, clock: ContinuousClock(), onEvent: onEvent)
    }

    /// An emitter whose deadlines, waits for space, heartbeat and drop reports run on `clock` (tests).
    package init<C: Clock>(
        _ configuration: UploadConfiguration, delivery: Delivery, whenFull: WhenFull = .dropNewest, clock: C,
        dropReportInterval: Duration = .seconds(10), onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }
    ) throws where C.Duration == Duration {
        try configuration.validate()
        var options = delivery.options
        guard options.delivery != .singleRequest else {
            throw StreamUpError(
                .invalidConfiguration,
                "an emitter never sends one live request: its body would wait inside URLSession and stall the app's other requests; use segments")
        }
        if options.retry.maxRetries == RetryPolicy().maxRetries && options.retry.maxRetryTime == nil {
            // The uploader's default limit suits a command that ends; an app's emitter rides out
            // an outage of any length unless the app set a limit.
            options.retry.maxRetries = nil
        }
        if case .memory = options.storage {
            // One meaning for the buffer's size: what is held in memory.
            options.storage = .memory(capacity: configuration.bufferSize)
            options.segmentBytes = min(options.segmentBytes, max(1, configuration.bufferSize / 2))
            options.maxRecordBytes = min(options.maxRecordBytes, configuration.bufferSize)
        }
        uploader = try StreamUploader(configuration, options: options, onEvent: onEvent)
        maxRecordBytes = options.maxRecordBytes
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

    /// Encodes `value` as one JSON line and writes it; when the buffer is full, drops it
    /// (``WhenFull/dropNewest``) or waits at most the bound the app chose (``WhenFull/wait(atMost:)``),
    /// then drops it. A dropped record is counted and reported; it does not throw.
    /// - Throws: ``StreamUpError`` when the emitter has finished or stopped for good, or when the
    ///   record is longer than a segment may be; `CancellationError` when cancelled while
    ///   waiting (the record is then not written).
    public func emit(_ value: some Encodable) async throws {
        try await send(try line(for: value))
    }

    /// Encodes `value` as one JSON line and writes it if it fits now; returns whether it did.
    /// A record that does not fit is dropped, counted and reported with its cause; it never
    /// waits for space.
    @discardableResult
    public func tryEmit(_ value: some Encodable) -> Bool {
        guard let line = try? line(for: value) else {
            record(.dropped(.unwritable))
            return false
        }
        return trySend(line)
    }

    /// Writes `bytes` as they are (add the newline yourself); when the buffer is full, drops
    /// them or waits at most the app's bound (see ``emit(_:)``).
    public func send(_ bytes: [UInt8]) async throws {
        if let stopped = stoppedCause {
            throw StreamUpError(.bodyStreamClosed, stopped == .finished ? "the telemetry emitter has finished" : "the telemetry emitter gave up")
        }
        startRun()
        let outcome = try await write(bytes)
        record(outcome)
        if case .dropped(.gaveUp) = outcome { throw StreamUpError(.bodyStreamClosed, "the telemetry emitter gave up") }
        if case .dropped(.finished) = outcome { throw StreamUpError(.bodyStreamClosed, "the telemetry emitter has finished") }
    }

    /// Writes `bytes` if they fit now; returns whether they did. Never waits for space: a
    /// record that does not fit is dropped, counted and reported with its cause.
    @discardableResult
    public func trySend(_ bytes: [UInt8]) -> Bool {
        if let stopped = stoppedCause {
            record(.dropped(stopped))
            return false
        }
        let outcome = tryWrite(bytes)
        if case .written = outcome { startRun() }
        record(outcome)
        return outcome == .written
    }

    /// What became of a record.
    private enum Outcome: Equatable {
        case written
        case dropped(DropCause)
    }

    /// Writes `bytes` now if they fit, else waits for space as `whenFull` allows.
    private func write(_ bytes: [UInt8]) async throws -> Outcome {
        let now = tryWrite(bytes)
        guard case .dropped(let cause) = now, cause == .full || cause == .busy, whenFull.patience > .zero else { return now }
        let writer = uploader.bufferWriter
        let end = clock.elapsed() + whenFull.patience
        return try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await writer.writeWhole(bytes)
                return true
            }
            group.addTask { [clock] in
                try await clock.sleep(end)
                return false
            }
            // The first to end cancels the other; a write cancelled while it waits writes nothing.
            var written = false
            var failure: (any Error)?
            while let result = await group.nextResult() {
                group.cancelAll()
                switch result {
                case .success(let wrote): written = written || wrote
                case .failure(let error) where !(error is CancellationError): failure = error
                case .failure: break
                }
            }
            if written { return .written }
            try Task.checkCancellation()
            if failure != nil { return .dropped(stoppedCause ?? .gaveUp) }
            return .dropped(.fullTooLong)
        }
    }

    /// Writes `bytes` if they fit now, saying why not.
    private func tryWrite(_ bytes: [UInt8]) -> Outcome {
        do {
            switch try bytes.withUnsafeBytes({ try uploader.bufferWriter.tryWrite($0) }) {
            case .written: return .written
            case .full: return .dropped(.full)
            case .busy: return .dropped(.busy)
            }
        } catch {
            return .dropped(stoppedCause ?? .gaveUp)
        }
    }

    /// Why nothing more is written (`.finished` or `.gaveUp`), nil while the emitter is open.
    private var stoppedCause: DropCause? {
        state.withLock { state in
            if state.finishing { return .finished }
            return state.gaveUp != nil ? .gaveUp : nil
        }
    }

    private func record(_ outcome: Outcome) {
        switch outcome {
        case .written: state.withLock { $0.accepted += 1 }
        case .dropped(let cause): noteDrop(cause)
        }
    }

    /// Starts the upload if it has not started: the first record does it. When the upload
    /// stops on its own (not by `finish` or `cancel`), the emitter says it gave up.
    private func startRun() {
        state.withLock { state in
            guard state.run == nil else { return }
            state.run = Task { [weak self, uploader] in
                do {
                    let answer = try await uploader.runWithoutProducer()
                    if !answer.isSuccess { self?.gaveUp("the server answered \(answer.statusCode), which no retry changes") }
                    return answer
                } catch {
                    self?.gaveUp("\(error)")
                    throw error
                }
            }
        }
    }

    /// The upload stopped for good (`reason`) while the app did not ask for it: says so once.
    private func gaveUp(_ reason: String) {
        let undelivered = max(0, uploader.bytesProduced - uploader.bytesDelivered)
        let first = state.withLock { state -> Bool in
            guard !state.finishing, state.gaveUp == nil else { return false }
            state.gaveUp = reason
            return true
        }
        guard first else { return }
        onEvent(
            .gaveUp(
                "the telemetry emitter gave up: \(reason); \(undelivered) bytes of records were not delivered, and records emitted from now on are dropped"
            ))
    }

    // MARK: Drops

    /// Counts a dropped record, and reports the drops since the last report if that was at
    /// least `dropReportInterval` ago.
    private func noteDrop(_ cause: DropCause) {
        let now = clock.elapsed()
        let report = state.withLock { state -> (drops: [DropCause: Int], total: Int, first: Bool)? in
            state.dropped += 1
            state.unreportedDrops[cause, default: 0] += 1
            let first = state.lastDropReport == nil
            if let last = state.lastDropReport, now - last < dropReportInterval { return nil }
            state.lastDropReport = now
            defer { state.unreportedDrops = [:] }
            return (state.unreportedDrops, state.dropped, first)
        }
        if let report { reportDrops(report.drops, total: report.total, first: report.first) }
    }

    /// Reports the drops not reported yet (at finish).
    private func reportRemainingDrops() {
        let report = state.withLock { state -> (drops: [DropCause: Int], total: Int)? in
            guard !state.unreportedDrops.isEmpty else { return nil }
            defer { state.unreportedDrops = [:] }
            return (state.unreportedDrops, state.dropped)
        }
        if let report { reportDrops(report.drops, total: report.total, first: false) }
    }

    private func reportDrops(_ drops: [DropCause: Int], total: Int, first: Bool) {
        let count = drops.values.reduce(0, +)
        let records = count == 1 ? "1 record" : "\(count) records"
        let since = first ? "" : " since the last report"
        let pace = first ? "; drops are reported at most every \(dropReportInterval)" : ""
        let causes = drops.sorted { $0.key < $1.key }.map { cause, number in
            (drops.count > 1 ? "\(number) " : "") + describe(cause)
        }
        onEvent(.notice("telemetry: \(records) dropped\(since), \(total) in all: \(causes.joined(separator: "; "))\(pace)"))
    }

    /// Why records were dropped, for a person.
    private func describe(_ cause: DropCause) -> String {
        switch cause {
        case .full: "the telemetry buffer (\(bufferSize) bytes) was full"
        case .fullTooLong: "the telemetry buffer (\(bufferSize) bytes) was full for longer than \(whenFull.patience)"
        case .busy: "another record held the telemetry buffer while it waited for space"
        case .unwritable: "the record could not be encoded, or was longer than \(maxRecordBytes) bytes"
        case .finished: "the emitter had finished"
        case .gaveUp: "the emitter had given up (\(state.withLock { $0.gaveUp } ?? "the upload ended"))"
        }
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
        guard stoppedCause == nil, tryWrite(bytes) == .written else { return false }
        startRun()
        return true
    }

    private func stopHeartbeat() {
        state.withLock { $0.heartbeat }?.cancel()
    }

    // MARK: Flush, finish, cancel

    /// Returns once every byte written before the call has been acknowledged by the server.
    /// A retry waiting out its backoff is tried at once.
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
            let run = state.withLock { state in
                state.finishing = true
                return state.run
            }
            // The writes already in line complete first.
            try? await uploader.bufferWriter.waitForEarlierWrites()
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
        // The app ended it: not a stop of the emitter's own (no `gaveUp` event); later writes
        // are refused as after `finish`.
        state.withLock { $0.finishing = true }
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
