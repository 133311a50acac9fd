import Foundation
import StreamUpSystem

/// An embedded telemetry stream: NDJSON records that any task or thread of an app emits,
/// delivered in acknowledged segments.
///
/// ```swift
/// let emitter = try TelemetryEmitter(url: URL(string: "https://telemetry.example/ingest")!)
/// try await emitter.emit(Reading(sensor: "t1", celsius: 21.5))         // never waits for the server
/// let accepted = emitter.tryEmit(Reading(sensor: "t2", celsius: 19))  // never suspends; false = dropped
/// try await emitter.finish(within: .seconds(5))                        // at shutdown
/// ```
///
/// Each record goes out as one line, whole, whatever the concurrency; dates are RFC 3339 in
/// UTC with milliseconds. The first record starts the upload; nothing is sent before it.
///
/// Delivery (``Options/delivery``): the records go out as acknowledged segments through a
/// ``StreamUploader``: a record reaches a receiver within about a segment's time (1 s), a
/// failed segment is sent again, and ``flush(within:)`` waits for acknowledgements. Segments are
/// complete bodies, so nothing the emitter does ever waits inside URLSession, where the app's
/// own requests would wait behind it (see <doc:DesignNotes>).
///
/// Outages: the emitter keeps trying for as long as the app runs, unless the delivery's retry
/// policy sets a limit. A receiver that cannot be reached (connection refused, name not
/// resolved) is tried again within a second, so delivery resumes within about a second of its
/// return; one that answers a failure (429, 5xx) gets a backoff capped at 30 s. The buffer
/// (``Options/bufferSize``, 8 MiB) holds about a minute of 1,000 records a second meanwhile.
/// When the emitter does stop (a limit reached, or an answer no retry can fix, such as a 401),
/// it says so once with a ``UploadEvent/Kind/gaveUp`` event, and from then on `emit` throws and
/// `tryEmit` drops.
///
/// Backpressure: an app's logging call never waits for the server. When the buffer is full,
/// `emit` and `send` drop the record at once (``WhenFull/dropNewest``, the default) or wait
/// for space at most the time the app chose (``WhenFull/wait(atMost:)``), then drop it;
/// `tryEmit` and `trySend` never suspend and never wait for space, for code that cannot await
/// (a swift-log `LogHandler`). Dropped records are counted in ``metrics`` and reported through
/// `onEvent` as a `.notice` that says why they were dropped, at most once per 10 s. Events carry
/// no secrets: credential header values are redacted.
///
/// `finish(within:)` lets the writes in line complete, ends the stream, tries a retry that is
/// waiting out its backoff at once, and returns the server's answer; an `emit` that starts
/// after it throws ``StreamUpError`` (`.bodyStreamClosed`). A task cancelled while waiting in
/// `emit` throws `CancellationError` and writes nothing.
///
/// Thread safety: every method may be called from any task or thread; records are written
/// through the uploader's ``StreamWriter``, which keeps each whole and in the order of arrival;
/// the emitter's lifecycle is guarded by the `state` `Mutex`, its counters by
/// `TelemetryCounters`' own, and a receiver's record formatter by `recordFormatter`'s (nothing
/// is called out while any is held).
public final class TelemetryEmitter: Sendable {
    /// Where the emitter is in its life: each case holds the upload's task where there is one.
    ///
    /// Thread safety: a value type, inside `state`.
    private enum Lifecycle {
        /// Records are taken; the upload runs once the first one came (nil before).
        case open(run: Task<UploadResponse, Error>?)
        /// The upload stopped on its own (`reason`): records are dropped.
        case gaveUp(reason: String, run: Task<UploadResponse, Error>)
        /// `finish` or `cancel` began: no more records (`gaveUp`: why it had stopped before).
        case finishing(run: Task<UploadResponse, Error>?, gaveUp: String?)
    }

    /// The lifecycle and the heartbeat's task.
    ///
    /// Thread safety: a value type, inside `state`.
    private struct State {
        var lifecycle = Lifecycle.open(run: nil)
        var heartbeat: Task<Void, Never>?
    }

    let uploader: StreamUploader
    private let state = Mutex(State())
    let counters: TelemetryCounters
    let encoder: JSONEncoder
    let whenFull: WhenFull
    /// The emitter's waits for space, deadlines, heartbeat and drop reports, and its uploader's
    /// segment times and backoffs, are measured on this one clock.
    let clock: UploadClock
    let onEvent: @Sendable (UploadEvent) -> Void
    /// The longest record `emit` takes: `delivery.maxRecordBytes` (1 MiB), at most the buffer's size.
    let maxRecordBytes: Int
    /// Makes each emitted line (and beat) the message of a record of a receiver's shape, with
    /// the time it was emitted (nil: the line is the record).
    let recordFormatter: Mutex<RecordFormatter>?

    /// Creates an emitter for `url` that sends NDJSON (`application/x-ndjson`); nothing is sent
    /// until the first record.
    /// - Parameters:
    ///   - url: where the records go.
    ///   - headers: extra request header fields (credentials never appear in events).
    ///   - options: the buffer's size, what `emit` does when it is full, and the delivery.
    ///   - onEvent: what happens to the upload, for logging (``UploadEvent``).
    /// - Throws: ``StreamUpError`` (`.invalidConfiguration`) when an option cannot work.
    public convenience init(
        url: URL, headers: [UploadConfiguration.Header] = [], options: Options = Options(),
        onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }
    ) throws {
        var configuration = UploadConfiguration(url: url)
        configuration.contentType = "application/x-ndjson"
        configuration.headers = headers
        try self.init(configuration, options: options, onEvent: onEvent)
    }

    /// Creates an emitter that speaks `receiver`'s API (``Receiver``): its request (its usual
    /// path on a URL without one, its content type, the document around each request's records:
    /// for ``Receiver/otlp`` one binary `ExportLogsServiceRequest`), its limits and retries
    /// (``Receiver/deliveryOptions(_:)`` over `options.delivery`), and its records: each emitted
    /// value, as its one line of JSON, is the message of a record of the receiver's shape
    /// stamped with the time it was emitted (an OTLP log record's string body, a Loki entry's
    /// line), and so is each heartbeat.
    /// - Parameters:
    ///   - receiver: the receiver's preset.
    ///   - url: the receiver's address (its usual path added when it has none).
    ///   - labels: the stream's labels, where the receiver has them (Loki labels, OTLP resource
    ///     attributes).
    ///   - headers: extra request header fields (credentials never appear in events).
    ///   - options: the buffer's size, what `emit` does when it is full, and the delivery,
    ///     within the receiver's limits.
    ///   - onEvent: what happens to the upload, for logging (``UploadEvent``).
    /// - Throws: ``StreamUpError`` (`.invalidConfiguration`) when an option cannot work or the
    ///   receiver refuses a label.
    public convenience init(
        receiver: Receiver, url: URL, labels: [(name: String, value: String)] = [], headers: [UploadConfiguration.Header] = [],
        options: Options = Options(), onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }
    ) throws {
        try self.init(receiver: receiver, url: url, labels: labels, headers: headers, options: options, clock: ContinuousClock(), onEvent: onEvent)
    }

    /// An emitter for `receiver` on `clock` (tests).
    package convenience init<C: Clock>(
        receiver: Receiver, url: URL, labels: [(name: String, value: String)] = [], headers: [UploadConfiguration.Header] = [],
        options: Options = Options(), clock: C, onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }
    ) throws where C.Duration == Duration {
        var configuration = try receiver.configuration(url: url, labels: labels)
        configuration.headers = headers
        var options = options
        options.delivery = receiver.deliveryOptions(options.delivery)
        try self.init(configuration, options: options, clock: clock, format: try receiver.formatter(labels: labels), onEvent: onEvent)
    }

    /// Creates an emitter with the request `configuration` (method, content type, headers, a
    /// `headerProvider` for credentials that rotate, response timeout, gzip); nothing is sent
    /// until the first record.
    /// - Throws: ``StreamUpError`` (`.invalidConfiguration`) when an option cannot work (a
    ///   gzip level zlib refuses, a buffer size out of range, one live request), or when a spool
    ///   cannot be opened.
    public convenience init(
        _ configuration: UploadConfiguration, options: Options = Options(), onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }
    ) throws {
        try self.init(configuration, options: options, clock: ContinuousClock(), onEvent: onEvent)
    }

    /// An emitter, and its uploader, on `clock` (tests): waits for space, deadlines, heartbeat
    /// ticks, drop reports, segment times and retry backoffs; `format` makes each line the
    /// message of a record (nil: the line is the record).
    package init<C: Clock>(
        _ configuration: UploadConfiguration, options: Options = Options(), clock: C, dropReportInterval: Duration = .seconds(10),
        format: RecordFormatter? = nil, onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }
    ) throws where C.Duration == Duration {
        let delivery = try options.uploaderOptions()
        let clock = UploadClock(clock)
        uploader = try StreamUploader(configuration, options: delivery, clock: clock, onEvent: onEvent)
        maxRecordBytes = delivery.maxRecordBytes
        recordFormatter = format.map { Mutex($0) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(RFC3339.string(from: date))
        }
        self.encoder = encoder
        self.whenFull = options.whenFull
        self.clock = clock
        self.counters = TelemetryCounters(reportEvery: dropReportInterval)
        self.onEvent = onEvent
        // What an earlier run left in the spool goes out without waiting for a new record.
        if uploader.recoveredBytes > 0 { startRun() }
    }

    // MARK: Writing

    /// Encodes `value` as one JSON line and writes it; when the buffer is full, drops it
    /// (``WhenFull/dropNewest``) or waits at most the bound the app chose (``WhenFull/wait(atMost:)``),
    /// then drops it. A dropped record is counted and reported; it does not throw.
    /// - Throws: ``StreamUpError`` when the emitter has finished or stopped for good, or when the
    ///   record is longer than a record may be; `CancellationError` when cancelled while
    ///   waiting (the record is then not written).
    public func emit(_ value: some Encodable) async throws {
        try await send(try line(for: value))
    }

    /// Encodes `value` as one JSON line and writes it if it fits now; returns whether it did.
    /// For code that cannot await (a swift-log `LogHandler`'s `log`): it never suspends and
    /// never waits for space, whatever ``Options/whenFull`` says. A record that does not fit (the
    /// buffer is full, or an `emit` waits for space ahead of it) is dropped, counted and
    /// reported with its cause. It holds the buffer's lock while it copies the record (with a
    /// spool: while it writes it to the spool's file, in the calling thread).
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

    /// Writes `bytes` if they fit now; returns whether they did. Never suspends and never waits
    /// for space (see ``tryEmit(_:)``): bytes that do not fit are dropped, counted and reported
    /// with their cause.
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

    /// Why nothing more is written (`.finished` or `.gaveUp`), nil while the emitter is open.
    var stoppedCause: DropCause? {
        state.withLock { state in
            switch state.lifecycle {
            case .open: nil
            case .gaveUp: .gaveUp
            case .finishing: .finished
            }
        }
    }

    /// Why the upload stopped on its own, if it did.
    var gaveUpReason: String? {
        state.withLock { state in
            switch state.lifecycle {
            case .open: nil
            case .gaveUp(let reason, _): reason
            case .finishing(_, let reason): reason
            }
        }
    }

    /// Starts the upload if it has not started and the emitter is open: the first record does
    /// it. When the upload stops on its own (not by `finish` or `cancel`), the emitter says it
    /// gave up.
    func startRun() {
        state.withLock { state in
            guard case .open(nil) = state.lifecycle else { return }
            // The task cannot reach `gaveUp` (which takes the lock) before it is stored here.
            state.lifecycle = .open(
                run: Task { [weak self, uploader] in
                    do {
                        let answer = try await uploader.runWithoutProducer()
                        if !answer.isSuccess { self?.gaveUp("the server answered \(answer.statusCode), which no retry changes") }
                        return answer
                    } catch {
                        self?.gaveUp("\(error)")
                        throw error
                    }
                })
        }
    }

    /// The upload stopped for good (`reason`) while the app did not ask for it: says so once.
    private func gaveUp(_ reason: String) {
        let undelivered = max(0, uploader.bytesProduced - uploader.bytesDelivered)
        let first = state.withLock { state -> Bool in
            switch state.lifecycle {
            case .open(.some(let run)):
                state.lifecycle = .gaveUp(reason: reason, run: run)
                return true
            case .open(nil): preconditionFailure("invalid state: the upload gave up before it started")
            case .gaveUp, .finishing: return false
            }
        }
        guard first else { return }
        onEvent(
            .gaveUp(
                "the telemetry emitter gave up: \(reason); \(undelivered) bytes of records were not delivered, and records emitted from now on are dropped"
            ))
    }

    /// Takes no more records (`finish` or `cancel`); returns the upload's task, if it started.
    private func stopTakingRecords() -> Task<UploadResponse, Error>? {
        state.withLock { state in
            switch state.lifecycle {
            case .open(let run):
                state.lifecycle = .finishing(run: run, gaveUp: nil)
                return run
            case .gaveUp(let reason, let run):
                state.lifecycle = .finishing(run: run, gaveUp: reason)
                return run
            case .finishing(let run, _):
                return run
            }
        }
    }

    /// Stops the heartbeat, if any, and stores `next` (nil: none) in its place.
    func replaceHeartbeat(with next: Task<Void, Never>?) {
        let replaced = state.withLock { state -> Task<Void, Never>? in
            defer { state.heartbeat = next }
            return state.heartbeat
        }
        replaced?.cancel()
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
        replaceHeartbeat(with: nil)
        let finishing: @Sendable () async throws -> UploadResponse? = { [self] in
            let run = stopTakingRecords()
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
        replaceHeartbeat(with: nil)
        // The app ended it: not a stop of the emitter's own (no `gaveUp` event); later writes
        // are refused as after `finish`.
        _ = stopTakingRecords()
        uploader.cancel()
    }

    /// Counters so far.
    public var metrics: Metrics {
        let (produced, delivered) = (uploader.bytesProduced, uploader.bytesDelivered)
        return Metrics(accepted: counters.accepted, dropped: counters.dropped, bytesProduced: produced, bytesSent: delivered)
    }
}
