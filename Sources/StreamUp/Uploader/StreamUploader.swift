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
/// Thread safety: `state` (the tasks, the counters) is guarded by a `Mutex`; the bytes and
/// their offsets belong to the buffer's lock; every method may be called from any thread.
/// Requests run one at a time from the delivery task that `run` starts; URLSession's
/// callbacks run on the session's own delegate queue (`SegmentSession`); with a spool and a
/// state file, the checkpoints that save the sources' positions run in a task of their own.
/// Segment deadlines, retry backoffs and checkpoints are measured on one clock (the continuous
/// clock, or a test's manual one), never read from the system directly.
public final class StreamUploader: Sendable {
    /// How the stream is cut, kept and retried.
    public struct Options: Sendable {
        /// End a segment at the last record boundary within this many bytes (default 8 MiB;
        /// at most half the storage's capacity: the uploader's `options` say what was used).
        public var segmentBytes = 8 << 20
        /// End a segment at the first record boundary this long after its first byte (default
        /// 1 s): how long a record waits before a whole-request receiver can see it.
        public var segmentDuration: Duration = .seconds(1)
        /// Where records end: requests end only there (default: lines).
        public var records: RecordMode = .lines
        /// The longest record; a longer one is split there, with a notice (default 1 MiB).
        public var maxRecordBytes = 1 << 20
        /// The most records in one segment (nil: no limit; Datadog takes at most 1,000).
        public var maxRecordsPerSegment: Int?
        /// Where unacknowledged bytes are held (default: 8 MiB of memory); it must hold one
        /// record of `maxRecordBytes`.
        public var storage: Storage = .memory(capacity: 8 << 20)
        /// How segments reach the server (default: a request each).
        public var delivery: SegmentDelivery = .requests
        /// Which failures are retried, and how often.
        public var retry = RetryPolicy()
        /// Set aside segments the server refuses for good (or that run out of retries) in this
        /// directory and go on, instead of stopping; and the single records a receiver refuses
        /// while it stores the others (see `answerReader`).
        public var deadLetterDirectory: URL?
        /// Reads each segment's answer for records the receiver refused while it stored the
        /// others (Elasticsearch items, Splunk's invalid event, OTLP partial success, Loki's
        /// ignored entries): those are reported, kept in `deadLetterDirectory`, never sent
        /// again, and what the receiver did not process is. nil: the status alone decides.
        package var answerReader: AnswerReader?
        /// Save where a `PositionedProducer`'s sources stand in this file, and continue from
        /// there on the next start.
        public var stateFile: URL?
        /// Forget the saved position of a source once the producer has not followed it for
        /// this long (`SourceChange.stopped(_:)`); nil: keep every position.
        public var forgetSourcesAfter: Duration?
        /// Names the stream in `Streamup-Stream-Id` (a spool with pending bytes keeps its own).
        /// nil (the default): each uploader draws a new one, so two uploaders made from the same
        /// options never share a stream at the receiver. With a `stateFile` and the bytes in
        /// memory, a stream id equal to the one the state file saved continues that stream at
        /// the offset its saved positions stand for: give it only for a producer that makes the
        /// same bytes again from those positions.
        public var streamID: String?
        /// Send to these URLs instead of the configuration's alone (each with the configuration's
        /// method, headers and body), spread by `endpointChoice`; an endpoint that fails in a way
        /// that is retried is set aside with a backoff and probed again, and the segment goes to
        /// another one at once (``EndpointSet``). Plain requests only. Empty: the configuration's URL.
        package var endpoints: [URL] = []
        package var endpointChoice: EndpointChoice = .failover
        /// The most segment requests out at once (default 1: each segment waits for the answer
        /// to the one before). Above 1, segments are cut and sent while earlier ones wait for
        /// their answers; the stream is still acknowledged in order. Plain requests only: a
        /// resumable upload, one live request and a stream with a `deadLetterDirectory` (whose
        /// offsets leave out what is set aside) keep to one.
        public var maxInFlight = 1
        /// Whether the number of requests out adapts to the answers between 1 and `maxInFlight`
        /// (grows while they come back 2xx and no slower, halves on 429, 503, timeouts or a
        /// window of slower answers), or stays at `maxInFlight`.
        public var adaptiveInFlight = true
        public init() {}

        /// The options of one live chunked request (``SegmentDelivery/singleRequest``), the
        /// rest as by default.
        public static var singleRequest: Options {
            var options = Options()
            options.delivery = .singleRequest
            return options
        }

        /// The spool directory's path, if the bytes are held there.
        package var spoolDirectory: String? {
            guard case .spool(let directory, _) = storage else { return nil }
            return directory.path
        }
    }

    /// Where the bytes the server has not acknowledged yet are held. The producer waits while
    /// the storage is full: nothing is dropped.
    ///
    /// Thread safety: a value type.
    public enum Storage: Sendable, Hashable {
        /// In memory, at most `capacity` bytes; lost if the process ends.
        case memory(capacity: Int)
        /// In files in `directory` (see `SpoolStorage`): they survive a crash, and the next
        /// run with the same spool sends them first. `capacity` nil: 1 GiB or half the free
        /// space of the file system when the spool is opened, whichever is smaller.
        ///
        /// Either capacity is kept as given: it must hold one record (`maxRecordBytes`, else
        /// the uploader refuses it), and segments are at most half of it (`segmentBytes` is
        /// lowered to that), so the next one fills while one is in flight.
        case spool(directory: URL, capacity: Int? = nil)
    }

    /// How the segments of a stream reach the server.
    ///
    /// Thread safety: a value type.
    public enum SegmentDelivery: Sendable, Hashable {
        /// Each segment is a request of its own (the configuration's method), naming its place
        /// in the stream with `Streamup-Stream-Id` and `Streamup-Offset`: any HTTP receiver.
        case requests
        /// Segments are PATCHes appending to one IETF resumable upload (draft interop version
        /// 6); after a failure the server is asked how much it holds, so nothing is sent twice.
        case resumableUpload
        /// One chunked request that lasts as long as the producer, for receivers that store a
        /// body while it streams: its body is a stream over the same buffer, handed to
        /// URLSession in `needNewBodyStream`, and each byte is released as the connection takes
        /// it. Nothing is retried or sent again; the answer comes when the stream ends. The
        /// storage must be memory (its capacity is the buffer the producer waits on), with no
        /// state file and one endpoint.
        case singleRequest
    }

    /// Counters of a reliable upload.
    public struct Progress: Sendable, Equatable {
        /// Bytes the producer wrote in this run.
        public var produced: Int
        /// Stream offset up to which the server acknowledged the bytes (one request: the
        /// connection took them).
        public var acknowledged: Int
        /// Bytes held for a possible resend (in memory or in the spool).
        public var held: Int
        /// Bytes sent more than once.
        public var resent: Int
        /// Failed requests that were retried.
        public var retries: Int
        /// How often the producer was paused because the buffer was full.
        public var pauses: Int
        /// How long the producer spent paused.
        public var pausedTime: Duration
        /// Segments set aside in the dead-letter directory, and their bytes.
        public var deadLetters: Int
        public var deadLetterBytes: Int
        /// Records longer than `maxRecordBytes` that were split.
        public var splitRecords: Int
        /// Records the receiver refused while it stored the others (`Options.answerReader`, set
        /// by ``Receiver/deliveryOptions(_:)``).
        public var rejectedRecords: Int
    }

    struct State {
        var started = false
        var ended = false
        var cancelled = false
        var producer: Task<Void, Never>?
        var delivery: Task<UploadResponse, Error>?
        var resent = 0
        var retries = 0
        var deadLetters = 0
        var deadLetterBytes = 0
        var rejectedRecords = 0
        /// Bytes set aside as dead letters: `Streamup-Offset` counts the stream without them, so
        /// the receiver's stream stays contiguous.
        var skipped = 0
        /// The segments cut and not yet acknowledged, in stream order: a segment sent again
        /// from its start is cut the same (its bytes are what the receiver may hold), unless a
        /// smaller size is asked for.
        var cuts: [Range<Int>] = []
        var producerReference: (any PositionedProducer)?
        /// The bodies of the requests going out now, by their first stream offset, and the
        /// furthest stream offset earlier requests handed to the connection (for ``bytesSent``).
        var sending: [Int: WindowBody] = [:]
        var sentEnd = 0
        /// Plain requests out now, and how many the window lets out (for the metrics).
        var inFlight = 0
        var windowLimit = 1
    }

    public let configuration: UploadConfiguration
    /// The options as given, but `segmentBytes` as used (at most half the storage's capacity).
    public let options: Options
    /// The stream's name in `Streamup-Stream-Id`: the options' one (or one drawn for this
    /// uploader when they set none), or the spool's when it still held bytes of an earlier run.
    public let streamID: String
    let onEvent: @Sendable (UploadEvent) -> Void
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
    package init<C: Clock>(
        _ configuration: UploadConfiguration, options: Options = Options(), clock: C,
        onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }
    ) throws where C.Duration == Duration {
        try configuration.validate()
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
        let uploadClock = UploadClock(clock)
        self.clock = uploadClock
        let drawnID = options.streamID ?? UUID().uuidString.lowercased()
        let stateFile = options.stateFile?.path
        let tracksSources = stateFile != nil
        var sourceState = try stateFile.flatMap { try SourceState.load(from: $0) } ?? SourceState(sources: [])
        switch options.storage {
        case .spool(let directoryURL, let spoolCapacity):
            let directory = directoryURL.path
            let capacity = spoolCapacity ?? SpoolStorage.defaultCapacity(for: directory)
            let spool = try SpoolStorage.open(directory: directory, capacity: max(1, capacity), streamID: drawnID)
            // What an earlier run left counts (a spool that filled its file system is drained).
            try Self.checkRecordFits(
                options.maxRecordBytes, in: spool.capacity,
                spoolCapacity == nil
                    ? "the spool's default size (half the free space of the file system of \(directory): \(capacity) bytes)"
                    : "a spool of \(capacity) bytes (--spool-size)", remedy: "--spool-size")
            var recovered = spool.recovered
            for note in recovered.notes { onEvent(.notice(note)) }
            spool.setNotice({ onEvent(.notice($0)) }, clock: uploadClock)
            // The next input would be glued onto a record an earlier run left unfinished, unless
            // it is the same input going on from where that record stops (a followed file whose
            // saved position is the spool's end).
            let continued = tracksSources && recovered.sources.last?.streamEnd == recovered.end
            if options.records == .lines, !continued, recovered.inputEnd != recovered.end, recovered.end > recovered.acknowledged {
                let whole = try Self.wholeRecordsEnd(in: spool, from: recovered.acknowledged, to: recovered.end, maxRecord: options.maxRecordBytes)
                if whole < recovered.end {
                    try spool.cut(to: whole)
                    let dropped = recovered.end - whole
                    onEvent(
                        .notice(
                            "spool \(directory): dropped its last \(dropped) byte\(dropped == 1 ? "" : "s"), a record an earlier run stopped in the middle of (the rest of its input was never read)"
                        ))
                    recovered.end = whole
                }
            }
            buffer = ReplayBuffer(
                storage: spool, records: options.records, maxRecord: options.maxRecordBytes,
                acknowledged: recovered.acknowledged, written: recovered.end, tracksSources: tracksSources, keepsSourceEntries: false,
                clock: uploadClock)
            streamID = recovered.streamID
            // An upload made at another target is not this run's to continue.
            recoveredUpload = recovered.upload.flatMap { $0.target == configuration.url.absoluteString ? $0 : nil }
            // What the spool holds past the saved positions is sent from the spool: the
            // producer goes on after it.
            sourceState = Self.fold(recovered.sources, onto: sourceState, streamID: recovered.streamID)
            self.spool = spool
            state.withLock { state in
                state.skipped = recovered.skipped
                state.cuts = recovered.cuts
            }
        case .memory(let memoryCapacity) where options.delivery == .singleRequest:
            // Bytes, not records: the stream goes out as the producer writes it.
            buffer = .live(capacity: memoryCapacity)
            streamID = drawnID
            recoveredUpload = nil
            spool = nil
        case .memory(let memoryCapacity):
            try Self.checkRecordFits(options.maxRecordBytes, in: memoryCapacity, "a buffer of \(memoryCapacity) bytes (--buffer-size)", remedy: "--buffer-size")
            // The saved stream goes on where its saved positions stand when the options name it:
            // a producer that makes the same bytes again from there (a journal) keeps its offsets.
            let start = options.streamID != nil && sourceState.streamID == options.streamID ? max(0, sourceState.streamOffset ?? 0) : 0
            buffer = ReplayBuffer(
                storage: MemoryReplayStorage(capacity: memoryCapacity), records: options.records,
                maxRecord: options.maxRecordBytes, acknowledged: start, written: start, tracksSources: tracksSources, keepsSourceEntries: true,
                clock: uploadClock)
            streamID = drawnID
            recoveredUpload = nil
            spool = nil
        }
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
            let readAgain = tracksSources
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
    }

    /// The end of the last whole record among a spool's bytes `start..<end`: after the last
    /// `\n`, or after the last piece of `maxRecord` bytes a longer record was split into.
    static func wholeRecordsEnd(in spool: SpoolStorage, from start: Int, to end: Int, maxRecord: Int) throws(StreamUpError) -> Int {
        let lineEnd = try spool.lastLineEnd(in: start..<end)
        return lineEnd + (end - lineEnd) / maxRecord * maxRecord
    }

    /// The most bytes a segment carries in a buffer of `capacity`: `requested`, or half the
    /// capacity when that is less, so that the next segment can fill while one is in flight
    /// (a record longer than a segment still goes whole, alone; records fit the buffer).
    package static func segmentBytes(_ requested: Int, capacity: Int) -> Int {
        min(requested, max(1, capacity / 2))
    }

    /// Refuses a storage of `capacity` bytes (`what`, for the message; `remedy`, the option
    /// that sizes it) that cannot hold one record of `maxRecord` bytes: the capacity is never
    /// raised behind the caller's back.
    static func checkRecordFits(
        _ maxRecord: Int, in capacity: Int, _ what: @autoclosure () -> String, remedy: String
    ) throws(StreamUpError) {
        guard maxRecord > capacity else { return }
        throw StreamUpError(
            .invalidConfiguration,
            "\(what()) cannot hold one record of up to \(maxRecord) bytes (--max-record): give a larger \(remedy) or a smaller --max-record (segments are at most half of it: --segment-bytes)"
        )
    }

    /// The positions `entries` (a spool's index past its acknowledged offset) put the sources
    /// at, over the saved `state`: entries the state already covers change nothing.
    static func fold(_ entries: [SourceIndex.Entry], onto state: SourceState, streamID: String) -> SourceState {
        guard !entries.isEmpty else { return state }
        let covered = state.streamID == streamID ? (state.streamOffset ?? 0) : 0
        var result = state
        for entry in entries where entry.streamEnd > covered {
            if let index = result.sources.firstIndex(where: { $0.source == entry.source }) {
                var position = result.sources.remove(at: index)
                position.offset = entry.end
                result.sources.append(position)
            } else {
                result.sources.append(SourcePosition(source: entry.source, path: "", offset: entry.end))
            }
        }
        result.streamOffset = entries.last.map(\.streamEnd)
        return result
    }

    public var progress: Progress {
        let pauses = buffer.pauses
        let produced = writer.bytesWritten
        let (acknowledged, held) = buffer.withState { ($0.acknowledged, $0.written - $0.acknowledged) }
        let splits = buffer.splitRecords
        return state.withLock { state in
            Progress(
                produced: produced, acknowledged: acknowledged, held: held, resent: state.resent, retries: state.retries,
                pauses: pauses.count, pausedTime: pauses.time, deadLetters: state.deadLetters,
                deadLetterBytes: state.deadLetterBytes, splitRecords: splits, rejectedRecords: state.rejectedRecords)
        }
    }

    /// Segment requests out now and how many the window lets out, for `--metrics`.
    package var requestWindow: (inFlight: Int, limit: Int) { state.withLock { ($0.inFlight, $0.windowLimit) } }

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
            let whole = try? Self.wholeRecordsEnd(in: spool, from: acknowledged, to: written, maxRecord: options.maxRecordBytes)
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
        if let stateStore { positioned?.resume(from: stateStore.positions) }
        if let positioned, let report = sourceReporter() { positioned.reportSources(to: report) }
        if let positioned, let times = stateStore?.times { positioned.timeRecords(with: times) }
        let session = SegmentSession(configuration, requestsAtOnce: options.maxInFlight)
        let checkpoints = startCheckpoints()
        let producerTask = producer.map { writer.start($0) }
        let delivery = Task { options.delivery == .singleRequest ? try await deliverLive(session) : try await deliver(session) }
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
            session.invalidate()
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
        // The body's own lock is taken outside the state's.
        let (sentEnd, sending) = state.withLock { ($0.sentEnd, $0.sending) }
        let live = sending.values.map { min($0.range.upperBound, $0.range.lowerBound + $0.bytesSent) }.max() ?? 0
        return max(0, max(sentEnd, live, buffer.acknowledgedOffset) - producerStart)
    }
    /// Suspends until `produced` bytes of this run are delivered, or the upload can deliver no more.
    package func waitUntilDelivered(_ produced: Int) async { await waitUntilAcknowledged(producerStart + produced) }
    /// The writer into the upload's buffer; it takes bytes before ``run(_:)`` starts.
    package var bufferWriter: StreamWriter { writer }
    /// Whether the upload is one live request (``SegmentDelivery/singleRequest``).
    package var isSingleRequest: Bool { options.delivery == .singleRequest }
}
