import Foundation
import StreamUpHTTP
import StreamUpSystem

/// Streams a producer's bytes to an HTTP endpoint, by default as a series of requests
/// ("segments"), each acknowledged by the server, sending again whatever a failed segment
/// carried, so a network blink or a server restart loses nothing; or as one live chunked
/// request (``SegmentDelivery/singleRequest``).
///
/// ```swift
/// let uploader = try StreamUploader(UploadConfiguration(url: url))
/// let response = try await uploader.run(FileDescriptorProducer(fileDescriptor: 0))
/// ```
///
/// Producers write into one `ReplayBuffer` (in memory, or a spool on disk that survives a
/// restart) through a ``StreamWriter``, only when it has space; the bytes stay there until the
/// server acknowledges them. Each segment is cut from the acknowledged offset at a record
/// boundary (``RecordMode``), after `segmentBytes` or `segmentDuration`, so every request holds
/// whole records, and goes out as a complete body with `Content-Length` (a copy of at most one
/// segment): nothing waits inside URLSession, so the process's other requests never queue
/// behind it. How segments are sent is plain requests (any HTTP server) or PATCHes to one IETF
/// resumable upload; the decisions (retries, backoff, smaller segments after failures, dead
/// letters, the resumable sequence) are a pure `DeliveryMachine`. When the buffer is full, the
/// producer waits: nothing is dropped.
///
/// One live request is the Apple recipe over the same buffer: `URLSession.uploadTask(withStreamedRequest:)`,
/// whose body stream (a `BodyInputStream` over the buffer, `LiveBody`) is handed over in
/// `urlSession(_:task:needNewBodyStream:)` and reads the bytes as the producer writes them,
/// releasing each as the connection takes it; the producer writes only when the buffer has
/// space. Nothing is sent again, and the answer comes when the input ends.
///
/// With a state file and a `PositionedProducer` (a `FileTailer`), the uploader saves
/// where the producer's sources stand once their bytes are safe and hands the positions back
/// on the next start: each byte is delivered once across restarts (with a spool, even across
/// `kill -9`).
///
/// Each exchange (cut → body → request → answer → outcome) is an `UploadExchange` in
/// Request/, sent through an `ExchangeTransport` (URLSession's `SegmentSession`, or a test's
/// scripted one); the delivery task (StreamUploader+Delivery) runs them and hands their
/// outcomes to the machine.
///
/// Thread safety: `state` (the tasks, the dead-letter counts) is guarded by a `Mutex`, the
/// delivery machine by its own (`machine`: the delivery task drives it, `progress` and the
/// metrics read it); the bytes and their offsets belong to the buffer's lock; every method may
/// be called from any thread. Exchanges run from the delivery task that `run` starts;
/// URLSession's callbacks run on the session's own delegate queue (`SegmentSession`); with a
/// spool and a state file, the checkpoints that save the sources' positions run in a task of
/// their own.
/// Segment deadlines, retry backoffs and checkpoints are measured on one clock (the continuous
/// clock, or a test's manual one), never read from the system directly.
public final class StreamUploader: Sendable {
    struct State {
        var started = false
        var ended = false
        var cancelled = false
        var producer: Task<Void, Never>?
        var delivery: Task<UploadResponse, Error>?
        var deadLetters = 0
        var deadLetterBytes = 0
        var rejectedRecords = 0
        /// Bytes set aside as dead letters: `Streamup-Offset` counts the stream without them, so
        /// the receiver's stream stays contiguous.
        var skipped = 0
        var producerReference: (any PositionedProducer)?
    }

    public let configuration: UploadConfiguration
    /// The options as given, but `segmentBytes` as used (at most half the storage's capacity).
    public let options: Options
    /// The stream's name in `Streamup-Stream-Id`: the options' one (or one drawn for this
    /// uploader when they set none), or the spool's when it still held bytes of an earlier run.
    public let streamID: String
    /// Hears what happens, redacted first (``UploadEvent/redacted``).
    let onEvent: @Sendable (UploadEvent) -> Void
    /// The caller's handler itself, for events that are redacted already.
    let onRedactedEvent: @Sendable (UploadEvent) -> Void
    let buffer: ReplayBuffer
    let writer: StreamWriter
    let spool: SpoolStorage?
    let recoveredUpload: ResumableUploadReference?
    let stateStore: SourceStateStore?
    let deadLetters: DeadLetterStore?
    let state = Mutex(State())
    /// The wait before a retry, cut short by ``retryNow()``.
    let backoff = Backoff()
    /// What segment deadlines, retry backoffs and state checkpoints are measured on.
    let clock: UploadClock
    /// The decisions of the delivery (segments out, where they end, retries, the window): the
    /// delivery task drives it, `progress` and the metrics read its counts.
    let machine: Mutex<Machine>
    /// The bodies of the requests out now, for ``bytesSent``.
    let sending = SendingBodies()
    /// How requests reach the server: a test's scripted transport, or nil for URLSession (a
    /// ``SegmentSession`` each run).
    let transport: (any ExchangeTransport)?
    /// The TLS files given to the endpoints' transfers (``UploadConfiguration/tls``), until the run ends.
    let tlsRegistration: TLSEndpoints.Registration?

    /// - Throws: ``StreamUpError`` when the options cannot work, or the spool or the state file
    ///   cannot be opened.
    public convenience init(
        _ configuration: UploadConfiguration, options: Options = Options(),
        onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }
    ) throws {
        try self.init(configuration, options: options, clock: ContinuousClock(), onEvent: onEvent)
    }

    /// An uploader that measures segment deadlines, retry backoffs and state checkpoints on
    /// `clock` (a test's manual clock).
    package convenience init<C: Clock>(
        _ configuration: UploadConfiguration, options: Options = Options(), clock: C,
        onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }
    ) throws where C.Duration == Duration {
        try self.init(configuration, options: options, clock: clock, transport: nil, onEvent: onEvent)
    }

    /// An uploader whose requests go through `transport` (nil: URLSession), measuring its
    /// deadlines and backoffs on `clock`: a test's scripted transport and manual clock.
    init<C: Clock>(
        _ configuration: UploadConfiguration, options: Options = Options(), clock: C, transport: (any ExchangeTransport)?,
        onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }
    ) throws where C.Duration == Duration {
        self.transport = transport
        try configuration.validate()
        tlsRegistration = try configuration.tls.map { try TLSEndpoints.register($0, for: options.endpoints.isEmpty ? [configuration.url] : options.endpoints) }
        guard options.segmentBytes > 0, options.segmentDuration > .zero, options.maxRecordBytes > 0 else {
            throw StreamUpError(.invalidConfiguration, "segments need a positive size and duration, and records a positive size")
        }
        if options.endpoints.count > 1, options.delivery != .requests {
            let what = options.delivery == .singleRequest ? "a single request goes to one endpoint" : "a resumable upload lives at one endpoint"
            throw StreamUpError(.invalidConfiguration, "\(what): it cannot be spread over \(options.endpoints.count)")
        }
        if options.delivery == .singleRequest, configuration.body.otlpExport != nil {
            throw StreamUpError(
                .invalidConfiguration,
                "a single request cannot carry OTLP protobuf: the message gives its length before its records, so it is sent in segments (or use OTLP/HTTP JSON)"
            )
        }
        if options.delivery == .singleRequest, options.spoolDirectory != nil || options.stateFile != nil {
            throw StreamUpError(.invalidConfiguration, "a single request cannot be kept in a spool or saved in a state file: nothing of it can be sent again")
        }
        self.configuration = configuration
        self.onEvent = { onEvent($0.redacted) }
        self.onRedactedEvent = onEvent
        let uploadClock = UploadClock(clock)
        self.clock = uploadClock
        let opened = try UploadStorage.open(options, url: configuration.url, clock: uploadClock, onEvent: onEvent)
        (buffer, spool, streamID, recoveredUpload) = (opened.buffer, opened.spool, opened.streamID, opened.recoveredUpload)
        state.withLock { $0.skipped = opened.skipped }
        let (stateFile, sourceState) = (options.stateFile?.path, opened.sourceState)
        var options = options
        options.segmentBytes = Self.segmentBytes(options.segmentBytes, capacity: buffer.capacity)
        self.options = options
        writer = StreamWriter(buffer: buffer)
        buffer.onDroppedAtStop = { dropped in
            onEvent(
                .notice(
                    "stopping: dropped the last \(dropped) byte\(dropped == 1 ? "" : "s") read, a record the input had not finished (the rest of it is not read)"
                ))
        }
        if let spool {
            let readAgain = stateFile != nil
            buffer.onHeldDropped = { dropped in
                let bytes = "\(dropped) byte\(dropped == 1 ? "" : "s") read \(dropped == 1 ? "was" : "were")"
                let fate = readAgain ? "the next start reads \(dropped == 1 ? "it" : "them") again" : "\(dropped == 1 ? "it is" : "they are") lost"
                onEvent(.notice("\(bytes) waiting for room in the full spool \(spool.directory) and \(dropped == 1 ? "is" : "are") not kept: \(fate)"))
            }
        }
        let (id, written) = (streamID, buffer.writtenOffset)
        // A spool keeps each record's bytes, its time among them; in memory, the time bases go
        // in the state file, so lines read again after a restart get the times they were sent with.
        let times = spool == nil && stateFile != nil ? SourceTimes(loaded: sourceState.times ?? [], positions: sourceState.sources) : nil
        stateStore = stateFile.map {
            SourceStateStore(
                file: $0, initial: sourceState, streamID: id, streamOffset: written, forgetAfter: options.forgetSourcesAfter, times: times,
                notice: { onEvent(.notice($0)) })
        }
        deadLetters = options.deadLetterDirectory.map { DeadLetterStore(directory: $0.path) }
        machine = Mutex(
            Self.machine(
                options, keepsDeadLetters: deadLetters != nil, acknowledged: buffer.acknowledgedOffset, alreadySent: buffer.producerStart,
                cuts: opened.cuts, upload: recoveredUpload))
    }

    /// The delivery machine for `options`, over a stream acknowledged up to `acknowledged` whose
    /// first `alreadySent` bytes an earlier run (a spool's) may have sent, cut at `cuts`.
    private static func machine(
        _ options: Options, keepsDeadLetters: Bool, acknowledged: Int, alreadySent: Int, cuts: [Range<Int>], upload: ResumableUploadReference?
    ) -> Machine {
        Machine(
            Machine.Configuration(
                limits: SegmentLimits(maxBytes: options.segmentBytes, maxDuration: options.segmentDuration, maxRecords: options.maxRecordsPerSegment),
                retry: options.retry, resumable: options.delivery == .resumableUpload, keepsDeadLetters: keepsDeadLetters,
                // Offsets leave out what dead letters set aside, and a segment already out
                // when an earlier one is set aside would carry an offset that counts those
                // bytes (a gap a receiver ordering by offset never fills): one at a time then.
                maxInFlight: keepsDeadLetters ? 1 : options.maxInFlight, adaptive: options.adaptiveInFlight),
            acknowledged: acknowledged, alreadySent: alreadySent, cuts: cuts, upload: upload)
    }

    /// The most bytes a segment carries in a buffer of `capacity`: `requested`, or half the
    /// capacity when that is less, so that the next segment can fill while one is in flight
    /// (a record longer than a segment still goes whole, alone; records fit the buffer).
    package static func segmentBytes(_ requested: Int, capacity: Int) -> Int {
        min(requested, max(1, capacity / 2))
    }

    /// The positions `entries` (a spool's index past its acknowledged offset) put the sources
    /// at, over the saved `state` (``UploadStorage/fold(_:onto:streamID:)``).
    static func fold(_ entries: [SourceIndex.Entry], onto state: SourceState, streamID: String) -> SourceState {
        UploadStorage.fold(entries, onto: state, streamID: streamID)
    }

    /// Segment requests out now and how many the window lets out, for `--metrics`.
    package var requestWindow: (inFlight: Int, limit: Int) { machine.withLock { ($0.inFlight, $0.concurrency.limit) } }

    /// Lines the producer wrote in this run (0 with ``RecordMode/rawBytes``), for `--metrics`.
    package var linesProduced: Int { buffer.linesWritten }

    /// How long ago the oldest byte the server has not acknowledged was written (zero when
    /// none is held), for `--metrics`: older by less than 100 ms than the truth.
    package var oldestUnacknowledgedAge: Duration { buffer.oldestHeldAge() }

    /// Bytes at the spool's end that belong to a record the input has not finished: the next
    /// start drops them (nothing can finish them then), unless positions are saved (`--state`),
    /// which make the same input go on where they stop. 0 without a spool.
    package var unfinishedSpoolBytes: Int {
        guard let spool, options.records == .lines, stateStore == nil else { return 0 }
        let (acknowledged, written, ended) = buffer.withState { ($0.acknowledged, $0.written, $0.inputReachedEnd) }
        guard written > acknowledged, !ended,
            let whole = try? UploadStorage.wholeRecordsEnd(in: spool, from: acknowledged, to: written, maxRecord: options.maxRecordBytes)
        else { return 0 }
        return written - whole
    }

    /// The bytes the storage (memory or spool) holds at most.
    package var storageCapacity: Int { buffer.capacity }

    /// The stream offset of the producer's first byte: 0, or after what a spool still held.
    package var producerStart: Int { buffer.producerStart }

    /// Bytes an earlier run left in the spool that are not acknowledged yet (they go out before
    /// anything the producer writes).
    package var recoveredBytes: Int { max(0, producerStart - buffer.acknowledgedOffset) }

    /// Where each source stands in the saved state (empty without a state file).
    package var sourcePositions: [SourcePosition] { stateStore?.positions ?? [] }

    /// Runs `producer` and delivers all it writes; returns the server's last answer. Call it once.
    /// - Returns: a 2xx answer once everything is acknowledged (or set aside as dead letters),
    ///   or the first answer that is final (a 4xx other than 408/429 without dead letters, or
    ///   the last one when retries ran out). An input that ends before its first byte sends no
    ///   request (most receivers refuse an empty one): the answer is then a made-up 204 with no
    ///   fields and an empty body.
    /// - Throws: ``StreamUpError`` when retries ran out on transport failures, on a spool or
    ///   state-file failure, on a resumable-protocol violation, when the producer failed, or
    ///   on cancel.
    public func run(_ producer: some Producer) async throws -> UploadResponse {
        try await run(producer as (any Producer)?)
    }

    /// Delivers what is written through ``bufferWriter`` by any number of writers until
    /// ``finish()`` ends the stream (or ``cancel()``); returns the server's last answer, as
    /// ``run(_:)`` does. Call it once.
    package func runWithoutProducer() async throws -> UploadResponse {
        try await run(nil)
    }

    private func run(_ producer: (any Producer)?) async throws -> UploadResponse {
        let positioned = producer as? any PositionedProducer
        let first = state.withLock { state -> Bool in
            defer { state.started = true }
            state.producerReference = positioned
            return !state.started
        }
        guard first else { throw StreamUpError(.invalidConfiguration, "an uploader runs once; create a new one") }
        // Without a state file the producer keeps where its owner put it (`--single-request`).
        if let stateStore { positioned?.resume(from: stateStore.positions, savedAt: stateStore.savedAt) }
        if let positioned, let report = sourceReporter() { positioned.reportSources(to: report) }
        if let positioned, let times = stateStore?.times { positioned.timeRecords(with: times) }
        // The requests go through the transport given (a test's), or a URLSession of this run.
        let transport: any ExchangeTransport = self.transport ?? SegmentSession(configuration, requestsAtOnce: options.maxInFlight)
        let checkpoints = startCheckpoints()
        let producerTask = producer.map { writer.start($0) }
        let delivery = Task { options.delivery == .singleRequest ? try await deliverLive(transport) : try await deliver(transport) }
        let cancelledMeanwhile = state.withLock { state in
            state.producer = producerTask
            state.delivery = delivery
            return state.cancelled
        }
        if cancelledMeanwhile { cancel() }
        defer {
            state.withLock { $0.ended = true }
            checkpoints?.cancel()
            // Whatever ended the run, nothing more is read: wake the producer.
            writer.fail(StreamUpError(.bodyStreamClosed, "the upload has ended"))
            producerTask?.cancel()
            transport.invalidate()
            tlsRegistration?.release()
            saveSourcesAtEnd()
            // The spool is free for the next run at once, not when this uploader goes (whose
            // last reference may outlive the run: a removed `streamup run` pipeline added back).
            spool?.releaseLock()
        }
        let answer = try await withTaskCancellationHandler {
            try await delivery.value
        } onCancel: {
            cancel()
        }
        if let spool {
            // A directory deleted while running: nothing of this run is on disk.
            spool.checkDirectory()
            if spool.isDirectoryGone { throw Self.spoolGone(spool.directory, held: buffer.withState { $0.written - $0.acknowledged }) }
        }
        if let spool, buffer.isDelivered {
            saveSourcesAtEnd()
            try spool.removeDeliveredFiles()
        }
        return answer
    }

    /// The failure of a run that ended while its spool directory was gone.
    static func spoolGone(_ directory: String, held: Int) -> StreamUpError {
        let what =
            held == 0
            ? "every byte was delivered, but the spool's record of the stream is gone"
            : "the \(held) byte\(held == 1 ? "" : "s") the server did not acknowledge \(held == 1 ? "is" : "are") lost"
        return StreamUpError(.io, "spool \(directory) was deleted while running and is not back: \(what)")
    }

    /// Whether the spool's directory was deleted while running and is not back.
    package var isSpoolGone: Bool { spool?.isDirectoryGone ?? false }

    /// Ends the stream gracefully: the producer stops, everything written so far is delivered;
    /// a retry waiting out its backoff is tried at once.
    public func finish() {
        let producer = state.withLock { $0.producer }
        writer.finish(stopped: true)
        producer?.cancel()
        retryNow()
    }

    /// Aborts: the current request is cancelled and `run` throws `.cancelled`. A spool keeps
    /// what was not acknowledged for the next run.
    public func cancel() {
        let (producer, delivery) = state.withLock { state in
            state.cancelled = true
            return (state.producer, state.delivery)
        }
        buffer.failWriting(StreamUpError(.cancelled, "the upload was cancelled"))
        producer?.cancel()
        delivery?.cancel()
    }

    /// Ends a retry's backoff now (or the next one as soon as it begins): the failed segment is
    /// tried again at once. A graceful finish and a flush with a deadline call it.
    package func retryNow() {
        backoff.wake()
    }

    /// Suspends until the stream up to `offset` is acknowledged (or the upload failed).
    func waitUntilAcknowledged(_ offset: Int) async {
        await buffer.waitUntilAcknowledged(offset)
    }

    // MARK: What code that drives an upload needs (the emitter, the command-line tool)

    /// Bytes the producer has written in this run.
    package var bytesProduced: Int { writer.bytesWritten }
    /// Bytes of this run acknowledged (segments) or handed to the connection (one request).
    package var bytesDelivered: Int { max(0, buffer.acknowledgedOffset - producerStart) }
    /// Bytes of this run handed to the connection so far, acknowledged or not: the furthest
    /// stream offset any request's body reached as URLSession read it (a compressed body counts
    /// its compressed bytes). One request: the same as ``bytesDelivered``.
    package var bytesSent: Int {
        max(0, max(sending.furthest, buffer.acknowledgedOffset) - producerStart)
    }
    /// Suspends until `produced` bytes of this run are delivered, or the upload can deliver no more.
    package func waitUntilDelivered(_ produced: Int) async { await waitUntilAcknowledged(producerStart + produced) }
    /// The writer into the upload's buffer; it takes bytes before ``run(_:)`` starts.
    package var bufferWriter: StreamWriter { writer }
    /// Whether the upload is one live request (``SegmentDelivery/singleRequest``).
    package var isSingleRequest: Bool { options.delivery == .singleRequest }
}
