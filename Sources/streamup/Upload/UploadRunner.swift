import Foundation
import StreamUp
import StreamUpHTTP
import StreamUpSink
import StreamUpTail

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Runs `streamup [options] [URL...]`: stdin → acknowledged segments (or one chunked request,
/// `--single-request`) → exit status from the answers.
///
/// Thread safety: runs on the main task; callbacks only print.
enum UploadRunner {
    /// The buffer of one live request (`--single-request`) without `--buffer-size`: 1 MiB.
    /// Against 64 KiB it cuts the wake-ups per byte, for about 1.4× the throughput
    /// (Benchmarks/RESULTS.md); latency is the same, since nothing waits for it to fill.
    static let liveBufferSize = 1 << 20

    static func run(_ options: UploadOptions) async -> Int32 {
        let formatter: RecordFormatter?
        let multiline = options.records.multiline
        let parse = options.records.parse
        let filter = options.records.filter
        do {
            let wholeLines = multiline != nil || parse != nil || filter != nil
            formatter = wholeLines ? try options.multilineFormatter() : try options.recordFormatter()
        } catch {
            Terminal.error("\(error)")
            return ExitStatus.usage
        }
        return await withTarget(options) { url in
            guard let formatter else { return await upload(options, to: url, producer: FileDescriptorProducer(fileDescriptor: 0)).status }
            // Lines become records on the thread that reads them (one formatting path with the tailer).
            let formatting = LineFormatting(
                formatter, multiline: multiline, parse: parse,
                streamFormatter: { stream in try? options.multilineFormatter(extra: [(name: "stream", value: stream)]) }, filter: filter)
            return await upload(options, to: url, producer: FileDescriptorProducer(fileDescriptor: 0, formatting: formatting)).status
        }
    }

    /// Runs `body` with the URL to upload to: `options.url`, or without one, a local sink that
    /// prints what it stored at the end (the dry run, ``LocalSink``).
    static func withTarget(_ options: UploadOptions, _ body: (_ url: String) async -> Int32) async -> Int32 {
        if let url = options.url { return await body(url) }
        return await LocalSink.run(output: options.outputFile, body)
    }

    /// Streams `producer` to `urlText` with the options' headers and limits, as acknowledged
    /// segments (saving source positions in `stateFile`, if given, forgetting sources gone for
    /// `forgetSourcesAfter`) or as one request;
    /// SIGINT/SIGTERM call `onSignal` (by default a graceful finish). Returns the exit status
    /// and the answer, if any.
    static func upload(
        _ options: UploadOptions, to urlText: String, producer: some Producer, stateFile: String? = nil,
        forgetSourcesAfter: Duration? = nil, onSignal: (@Sendable () -> Void)? = nil
    ) async -> (status: Int32, response: UploadResponse?) {
        let verbose = options.verbose
        // In `streamup run`, the pipeline's metrics are served with the others' (RunRunner).
        let pipeline = PipelineContext.current
        let metrics = options.metrics.host == nil && pipeline == nil ? nil : Metrics(unhealthyAfter: options.metrics.unhealthyAfter)
        let uploader: StreamUploader
        switch makeUploader(
            options, to: urlText, stateFile: stateFile, forgetSourcesAfter: forgetSourcesAfter,
            onEvent: { event in
                metrics?.record(event)
                PipelineContext.withName(pipeline?.name) { logEvent(event, verbose: verbose) }
            })
        {
        case .success(let made): uploader = made
        case .failure(let failure): return (failure.status, nil)
        }
        let metricsServer: SinkServer?
        switch serveMetrics(metrics, options, uploader: uploader, files: producer as? FileTailer, dropped: options.records.filter?.dropped) {
        case .success(let server): metricsServer = server
        case .failure(let failure): return (failure.status, nil)
        }
        defer { metricsServer?.stop() }
        if let pipeline, let metrics {
            // Weak: a pipeline of `streamup run` that ended must free its uploader (and with it
            // its spool's lock) although its context lives on a while (the abort timer).
            pipeline.register(
                stop: { [weak uploader] in onSignal?() ?? uploader?.finish() }, abort: { [weak uploader] in uploader?.cancel() },
                metrics: metrics)
        } else {
            installSignals(for: uploader, timeout: options.shutdownTimeout ?? UploadOptions.defaultShutdownTimeout) {
                onSignal?() ?? uploader.finish()
            }
        }
        let meter = ProgressMeter.start(for: uploader, verbose: options.verbose, requested: options.progress)
        defer { meter?.stop() }
        do {
            let response = try await uploader.run(producer)
            meter?.stop()
            if options.verbose {
                Terminal.info("* \(uploader.progressLine); server answered \(response.statusCode)")
            }
            guard response.isSuccess else {
                // A last request the receiver answered with a partial failure (Splunk and Loki
                // say 400) ended a stream that is all processed: say what it refused.
                if uploader.unacknowledgedLine == nil, let refused = uploader.refusedLine {
                    Terminal.error(refused)
                    return (ExitStatus.httpFailure, response)
                }
                // One line: the answer, what to do about it, whether retries ran out, and
                // what became of the bytes not delivered.
                // The URL requested: the preset's path included (`/INDEX/_bulk`, …).
                let requested = (try? options.configuration(url: urlText).url) ?? URL(string: urlText)
                let retried = options.libraryOptions.retry.isRetryable(status: response.statusCode)
                let parts =
                    [AnswerReport.failureLine(response, requestURL: requested), AnswerReport.advice(status: response.statusCode)]
                    + [retried ? retriesRanOut(options.delivery, uploader) : nil, uploader.unacknowledgedLine]
                Terminal.error(parts.compactMap { $0 }.joined(separator: "; "))
                return (ExitStatus.httpFailure, response)
            }
            // The last answer's body goes to stdout (-o FILE); a dry run prints the local
            // sink's summary instead (LocalSink).
            let printed = options.url == nil ? ExitStatus.success : AnswerReport.printSuccess(response, to: options.outputFile)
            if let refused = uploader.refusedLine {
                Terminal.error(refused)
                return (ExitStatus.httpFailure, response)
            }
            return (printed, response)
        } catch {
            // One line: what went wrong, and what became of what was read.
            // Every byte read was set aside without an answer (an untrusted certificate, a form
            // boundary in the records): each segment's reason was already a line of its own.
            if let refused = uploader.refusedLine, uploader.unacknowledgedLine == nil {
                Terminal.error(refused)
                return (ExitStatus.httpFailure, nil)
            }
            // A failure that was retried until the limits ran out says so.
            let retried = (error as? StreamUpError)?.code == .transport
            let parts = ["\(error)", retried ? retriesRanOut(options.delivery, uploader) : nil, uploader.unacknowledgedLine]
            Terminal.error(parts.compactMap { $0 }.joined(separator: "; "))
            return ((error as? StreamUpError)?.code == .io ? ExitStatus.ioFailure : ExitStatus.noAnswer, nil)
        }
    }

    /// That the retries of a failure of a kind that is retried ran out, and the limits that
    /// ended them; nil without limits (nothing runs out) or when `uploader` never retried (a
    /// failure no retry fixes, or --retries 0, which the user knows).
    static func retriesRanOut(_ delivery: UploadOptions.DeliveryOptions, _ uploader: StreamUploader) -> String? {
        var limits: [String] = []
        if case .some(.some(let count)) = delivery.retries { limits.append("--retries \(count)") }
        if let time = delivery.retryMaxTime { limits.append("--retry-max-time \(short(time))") }
        guard !delivery.singleRequest, !limits.isEmpty, uploader.progress.retries > 0 else { return nil }
        return "gave up: retries ran out (\(limits.joined(separator: ", ")))"
    }

    /// An uploader could not be made; its line is on stderr already.
    struct NotMade: Error {
        let status: Int32
    }

    /// The uploader for `options` and `urlText` (acknowledged segments, saving source
    /// positions in `stateFile` if given, or one request), reporting to `onEvent`; or, after
    /// one line on stderr, the exit status (a usage or I/O problem).
    static func makeUploader(
        _ options: UploadOptions, to urlText: String, stateFile: String? = nil, forgetSourcesAfter: Duration? = nil,
        onEvent: @escaping @Sendable (UploadEvent) -> Void
    ) -> Result<StreamUploader, NotMade> {
        do {
            // Method, content type and a receiver's request (ReceiverOptions.swift).
            var configuration = try options.configuration(url: urlText)
            configuration.headers = options.headers
            configuration.responseTimeout = options.responseTimeout
            configuration.body.gzip = options.gzip
            // Credentials (read from their files now, and again for every request) in the
            // receiver's token header, then the form (after the receiver's envelope).
            configuration.headerProvider = try options.effectiveAuth.headerProvider(
                environment: ProcessInfo.processInfo.environment, literalHeaders: options.headers)
            try options.multipart.apply(to: &configuration)
            var library = options.libraryOptions
            if options.delivery.singleRequest {
                library.delivery = .singleRequest
                library.storage = .memory(capacity: options.bufferSize ?? Self.liveBufferSize)
            } else if let bufferSize = options.bufferSize, case .memory = library.storage {
                library.storage = .memory(capacity: bufferSize)
            }
            library.endpoints = try options.endpoints(first: configuration.url)
            library.endpointChoice = options.endpointChoice ?? .failover
            library.stateFile = stateFile.map { URL(fileURLWithPath: $0) }
            library.forgetSourcesAfter = forgetSourcesAfter
            return .success(try StreamUploader(configuration, options: library, onEvent: onEvent))
        } catch let error as StreamUpError where error.code == .io {
            Terminal.error("\(error)")
            return .failure(NotMade(status: ExitStatus.ioFailure))
        } catch {
            Terminal.error("\(error)")
            return .failure(NotMade(status: ExitStatus.usage))
        }
    }

    /// Serves `--metrics` for `uploader` (and the files `files` follows) with `metrics`; nil
    /// without --metrics; after one line on stderr, the exit status when it cannot listen.
    static func serveMetrics(
        _ metrics: Metrics?, _ options: UploadOptions, uploader: StreamUploader, files: FileTailer?, dropped: RecordFilter.Counter? = nil
    ) -> Result<SinkServer?, NotMade> {
        guard let metrics else { return .success(nil) }
        // Weak: the uploader's events hold `metrics`, so a strong capture would keep both alive
        // for good (in `streamup run`, a removed pipeline's spool locked until the process ends).
        metrics.attach { [weak uploader] in
            guard let uploader else { return Metrics.Gauges() }
            var gauges = uploader.metricGauges
            gauges.filesFollowed = files?.followedFileCount
            gauges.recordsDropped = dropped?.value
            return gauges
        }
        do {
            guard let server = try options.metrics.server(for: metrics) else { return .success(nil) }
            // A port picked by the system must be said; a chosen one only with -v.
            if options.metrics.port == 0 || options.verbose {
                Terminal.error("serving metrics on \(server.urlString)metrics and health on \(server.urlString)health")
            }
            return .success(server)
        } catch {
            Terminal.error("--metrics: \(error)")
            return .failure(NotMade(status: ExitStatus.usage))
        }
    }

    /// SIGINT/SIGTERM: one line saying what the stop waits for, then `stop` (a graceful end of
    /// the input), bounded by `timeout` (then exit 2 with one line); a second signal says what
    /// stopping at once loses or where it is kept.
    static func installSignals(for uploader: StreamUploader, timeout: Duration, stop: @escaping @Sendable () -> Void) {
        SignalHandling.install(
            onFirst: { name, _ in
                let held = uploader.meterCounts.waiting
                let what = held > 0 ? "delivering the \(counted(held, "byte")) still held" : "nothing is held, ending the upload"
                Terminal.error("stopping (\(name)): \(what), waiting at most \(short(timeout)) \(SignalHandling.secondStops)")
                stop()
                SignalHandling.exitLater(after: timeout, status: ExitStatus.noAnswer) {
                    Terminal.error("no answer within the shutdown timeout (\(short(timeout))); exiting: \(uploader.abortLine)")
                }
            }, onSecond: { uploader.abortLine })
    }

    /// A duration as the options take it: `30s`, `250ms`.
    static func short(_ duration: Duration) -> String {
        duration.formatted(.units(allowed: [.seconds, .milliseconds], width: .narrow))
    }

    /// What the library reports, on stderr: failures, recoveries, dead letters and file
    /// notices always (one line each, the first failure of a spell only), the rest with `-v`.
    /// Secret header values are redacted here, URLs' user information in ``Terminal``.
    static func logEvent(_ event: UploadEvent, verbose: Bool) {
        switch event.detail {
        case .requestStarted(let method, let url, let headers):
            guard verbose else { return }
            Terminal.info("> \(method) \(url.absoluteString)")
            for header in headers { Terminal.info("> \(header.name): \(SecretRedaction.value(ofField: header.name, header.value))") }
        case .responseReceived(let status, let headers):
            guard verbose else { return }
            let reason = status == 104 ? "Upload Resumption Supported" : HTTPURLResponse.localizedString(forStatusCode: status)
            Terminal.info("< \(status) \(reason)")
            // The server's words, cleaned as the answer line is: no escape code reaches the terminal.
            for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
                Terminal.info("< \(BodyText.oneLine(name)): \(BodyText.oneLine(SecretRedaction.value(ofField: name, value)))")
            }
        case .redirectRefused(let status, let location):
            guard verbose else { return }
            Terminal.info("* not following the \(status) redirect to \(location ?? "?"): a live body cannot be sent twice")
        case .retrying(let reason, let attempt, let delay, let first):
            let wait = short(delay)
            if verbose {
                Terminal.info("* \(reason); trying again in \(wait) (failure \(attempt) in a row)")
            } else if first {
                Terminal.error("delivery is failing: \(reason); retrying from the last acknowledged byte (-v shows each attempt)")
            }
        case .recovered(let failedAttempts, let resentBytes, let after, let duplicatesPossible):
            // A failover or a smaller segment that went through at once took no time to speak of.
            let spell = after < .milliseconds(1) ? "" : " over \(StreamUploader.spoken(after))"
            var line = "delivery recovered after \(failedAttempts) failed attempt\(failedAttempts == 1 ? "" : "s")\(spell)"
            if resentBytes > 0 {
                line += "; \(counted(resentBytes, "byte")) \(resentBytes == 1 ? "was" : "were") sent again"
                if duplicatesPossible { line += " (a receiver that ignores Streamup-Offset may hold some of them twice)" }
            }
            Terminal.error(line)
        case .deadLettered(let bytes, let file, let reason):
            Terminal.error("\(reason): kept the segment (\(counted(bytes, "byte"))) in \(file) and went on")
        case .recordsRejected(_, let reason, let file):
            Terminal.error(reason + (file.map { "; kept in \($0)" } ?? "; not kept (--dead-letter DIR keeps refused records)"))
        case .notice(let text), .gaveUp(let text):
            Terminal.error(text)
        case .source(let event):
            guard verbose || event.isNotice else { return }
            Terminal.error(event.description)
        }
    }
}

extension UploadOptions.DeliveryOptions {
    /// The library's options with these overrides.
    var libraryOptions: StreamUploader.Options { libraryOptions(base: StreamUploader.Options()) }

    /// The library's options `base` (the defaults, or a receiver's) with these overrides.
    func libraryOptions(base: StreamUploader.Options) -> StreamUploader.Options {
        var options = base
        options.records = records
        if let maxRecordBytes { options.maxRecordBytes = maxRecordBytes }
        // A shipper rides out an outage of any length unless told otherwise (the library's
        // own default, for apps, stops after a number of retries).
        options.retry.maxRetries = retries ?? nil
        options.retry.maxRetryTime = retryMaxTime
        if let segmentBytes { options.segmentBytes = segmentBytes }
        if let segmentDuration { options.segmentDuration = segmentDuration }
        if let spoolDirectory { options.storage = .spool(directory: URL(fileURLWithPath: spoolDirectory), capacity: spoolBytes) }
        options.delivery = resumable ? .resumableUpload : .requests
        if let retryStatuses { options.retry.retryableStatuses = retryStatuses }
        options.deadLetterDirectory = deadLetterDirectory.map { URL(fileURLWithPath: $0) }
        options.streamID = streamID
        return options
    }
}
