import Foundation
import StreamUp
import StreamUpHTTP
import StreamUpSink
import StreamUpTail

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One upload of a command, from the uploader its options make to the lines and the exit
/// status at its end: the one lifecycle of `streamup URL`, `tail`, `heartbeat`, `journal` and
/// every pipeline of `streamup run`. What differs is said once, in ``supervision``: a command
/// alone handles its own signals, serves its own `--metrics` and prints the last answer; a
/// pipeline is stopped and aborted by its supervisor through a ``PipelineHandle``, its metrics
/// are served with the others', its lines start with its name, and it prints nothing on stdout
/// (a service's stdout is the journal).
///
/// Thread safety: a value type; its closures capture only `Sendable` values.
struct UploadSession: Sendable {
    /// Who stops the upload, serves its metrics and reads its outcome.
    ///
    /// Thread safety: a value type.
    enum Supervision: Sendable {
        /// A command on its own: SIGINT, SIGTERM and SIGHUP stop it (``SignalHandling``),
        /// `--metrics` serves it, its last answer goes to stdout or `-o FILE`.
        case alone
        /// A pipeline of `streamup run`, supervised through `handle`.
        case pipeline(PipelineHandle)
    }

    let options: UploadOptions
    let supervision: Supervision

    init(_ options: UploadOptions, supervision: Supervision = .alone) {
        self.options = options
        self.supervision = supervision
    }

    /// The pipeline's name, in `streamup run`.
    var pipelineName: String? {
        switch supervision {
        case .alone: nil
        case .pipeline(let handle): handle.name
        }
    }

    /// One line on stderr (prefixed with the pipeline's name in `streamup run`).
    func say(_ line: String) {
        Terminal.error(line, pipeline: pipelineName)
    }

    /// What the library reports, on stderr, as ``EventLines`` words it.
    func log(_ event: UploadEvent) {
        EventLines.log(event, verbose: options.verbose, pipeline: pipelineName)
    }

    /// Runs `body` with the URL to upload to: `options.url`, or without one, a local sink that
    /// prints what it stored at the end (the dry run of a command alone, ``LocalSink``).
    func withTarget(_ body: (_ url: String) async -> Int32) async -> Int32 {
        if let url = options.url { return await body(url) }
        return await LocalSink.run(output: options.outputFile, body)
    }

    /// Streams `producer` to `urlText` with the options' headers and limits, as acknowledged
    /// segments (saving source positions in `stateFile`, if given, forgetting sources gone for
    /// `forgetSourcesAfter`) or as one request. A stop (a signal, or the supervisor) calls
    /// `onStop`, by default a graceful finish; `files` is counted in the metrics. Returns the
    /// exit status and the answer, if any.
    func run(
        to urlText: String, producer: some Producer, stateFile: String? = nil, forgetSourcesAfter: Duration? = nil, files: FileTailer? = nil,
        onStop: (@Sendable () -> Void)? = nil
    ) async -> (status: Int32, response: UploadResponse?) {
        let metrics: Metrics?
        switch supervision {
        case .alone: metrics = options.metrics.host == nil ? nil : Metrics(unhealthyAfter: options.metrics.unhealthyAfter)
        case .pipeline: metrics = Metrics(unhealthyAfter: options.metrics.unhealthyAfter)
        }
        if case .alone = supervision, let header = options.headers.first(where: { $0.value.contains("${") }) {
            // A shell keeps ${NAME} as text in single quotes: the receiver would get the text.
            say("the header \(header.name) holds the text ${…} as it is: a shell expands ${NAME} only outside single quotes (-H \"\(header.name): …${NAME}…\")")
        }
        let uploader: StreamUploader
        switch makeUploader(
            to: urlText, stateFile: stateFile, forgetSourcesAfter: forgetSourcesAfter,
            onEvent: { event in
                metrics?.record(event)
                log(event)
            })
        {
        case .success(let made): uploader = made
        case .failure(let failure): return (failure.status, nil)
        }
        let metricsServer: SinkServer?
        // A record whose filters did not finish goes masked: one line says so (then one a minute).
        let name = pipelineName
        options.records.filter?.notices.setHandler { line in Terminal.error(line, pipeline: name) }
        switch serveMetrics(metrics, uploader: uploader, files: files, filter: options.records.filter) {
        case .success(let server): metricsServer = server
        case .failure(let failure): return (failure.status, nil)
        }
        defer { metricsServer?.stop() }
        switch supervision {
        case .alone:
            installSignals(for: uploader) { onStop?() ?? uploader.finish() }
        case .pipeline(let handle):
            // Weak: a pipeline of `streamup run` that ended must free its uploader (and with it
            // its spool's lock) at once, whoever still holds the handle.
            handle.register(
                stop: { [weak uploader] in onStop?() ?? uploader?.finish() }, abort: { [weak uploader] in uploader?.cancel() },
                abortLine: { [weak uploader] in uploader?.abortLine ?? "nothing is lost: every byte read was acknowledged" },
                metrics: metrics ?? Metrics(unhealthyAfter: options.metrics.unhealthyAfter))
        }
        let meter = ProgressMeter.start(for: uploader, verbose: options.verbose, requested: options.progress)
        defer { meter?.stop() }
        do {
            let response = try await uploader.run(producer)
            meter?.stop()
            if options.verbose { say("* \(uploader.progressLine); server answered \(response.statusCode)") }
            return finished(response, uploader: uploader, url: urlText)
        } catch {
            return (failed(error, uploader: uploader), nil)
        }
    }

    /// The status and lines of an upload that ended with `response`. A pipeline writes the
    /// answer only to its `-o FILE`, never to stdout.
    private func finished(_ response: UploadResponse, uploader: StreamUploader, url urlText: String) -> (status: Int32, response: UploadResponse?) {
        guard response.isSuccess else {
            // A last request the receiver answered with a partial failure (Splunk and Loki
            // say 400) ended a stream that is all processed: say what it refused.
            if uploader.unacknowledgedLine == nil, let refused = uploader.refusedLine {
                say(refused)
                return (ExitStatus.httpFailure, response)
            }
            // One line: the answer, what to do about it, whether retries ran out, and what
            // became of the bytes not delivered. The URL requested: the preset's path included.
            let requested = (try? options.configuration(url: urlText).url) ?? URL(string: urlText)
            let retried = options.libraryOptions.retry.isRetryable(status: response.statusCode)
            let parts =
                [AnswerReport.failureLine(response, requestURL: requested), AnswerReport.advice(status: response.statusCode)]
                + [retried ? retriesRanOut(uploader) : nil, uploader.unacknowledgedLine]
            say(parts.compactMap { $0 }.joined(separator: "; "))
            return (ExitStatus.httpFailure, response)
        }
        // The last answer's body goes to stdout (-o FILE); a dry run prints the local sink's
        // summary instead (LocalSink); a pipeline prints nothing.
        let printed: Int32
        switch supervision {
        case .alone: printed = options.url == nil ? ExitStatus.success : AnswerReport.printSuccess(response, to: options.outputFile)
        case .pipeline: printed = options.outputFile.map { AnswerReport.printSuccess(response, to: $0) } ?? ExitStatus.success
        }
        if let refused = uploader.refusedLine {
            say(refused)
            return (ExitStatus.httpFailure, response)
        }
        return (printed, response)
    }

    /// The status and line of an upload that ended with `error`.
    private func failed(_ error: any Error, uploader: StreamUploader) -> Int32 {
        // Every byte read was set aside without an answer (an untrusted certificate, a form
        // boundary in the records): each segment's reason was already a line of its own.
        if let refused = uploader.refusedLine, uploader.unacknowledgedLine == nil {
            say(refused)
            return ExitStatus.httpFailure
        }
        let code = (error as? StreamUpError)?.code
        // An abort the supervisor asked for (the shutdown timeout passed) is said as such, with
        // what became of what was read; never as Swift's `CancellationError()`.
        if case .pipeline(let handle) = supervision, handle.wasAborted, error is CancellationError || code == .cancelled {
            let timeout = UploadRunner.short(options.shutdownTimeout ?? UploadOptions.defaultShutdownTimeout)
            say("stopped after the shutdown timeout (\(timeout)) before the receiver acknowledged everything: \(uploader.abortLine)")
            return ExitStatus.noAnswer
        }
        let what = error is CancellationError ? "the upload was cancelled" : "\(error)"
        // A failure that was retried until the limits ran out says so.
        let parts = [what, code == .transport ? retriesRanOut(uploader) : nil, uploader.unacknowledgedLine]
        say(parts.compactMap { $0 }.joined(separator: "; "))
        return code == .io ? ExitStatus.ioFailure : ExitStatus.noAnswer
    }

    /// That the retries of a failure of a kind that is retried ran out, and the limits that
    /// ended them; nil without limits (nothing runs out) or when `uploader` never retried (a
    /// failure no retry fixes, or --retries 0, which the user knows).
    func retriesRanOut(_ uploader: StreamUploader) -> String? {
        let delivery = options.delivery
        var limits: [String] = []
        if case .some(.some(let count)) = delivery.retries { limits.append("--retries \(count)") }
        if let time = delivery.retryMaxTime { limits.append("--retry-max-time \(UploadRunner.short(time))") }
        guard !delivery.singleRequest, !limits.isEmpty, uploader.progress.retries > 0 else { return nil }
        return "gave up: retries ran out (\(limits.joined(separator: ", ")))"
    }

    /// An uploader could not be made; its line is on stderr already.
    ///
    /// Thread safety: a value type.
    struct NotMade: Error {
        let status: Int32
    }

    /// The uploader for the options and `urlText` (acknowledged segments, saving source
    /// positions in `stateFile` if given, or one request), reporting to `onEvent`; or, after
    /// one line on stderr, the exit status (a usage or I/O problem).
    func makeUploader(
        to urlText: String, stateFile: String? = nil, forgetSourcesAfter: Duration? = nil, onEvent: @escaping @Sendable (UploadEvent) -> Void
    ) -> Result<StreamUploader, NotMade> {
        do {
            // Method, content type and a receiver's request (ReceiverOptions.swift).
            var configuration = try options.configuration(url: urlText)
            configuration.headers = options.headers
            configuration.responseTimeout = options.responseTimeout
            configuration.body.gzip = options.gzip
            configuration.tls = options.tls.configuration
            // Credentials (read from their files now, and again for every request) in the
            // receiver's token header, then the form (after the receiver's envelope).
            configuration.headerProvider = try options.effectiveAuth.headerProvider(
                environment: ProcessInfo.processInfo.environment, literalHeaders: options.headers)
            try options.multipart.apply(to: &configuration)
            var library = options.libraryOptions
            if options.delivery.singleRequest {
                library.delivery = .singleRequest
                library.storage = .memory(capacity: options.bufferSize ?? UploadRunner.liveBufferSize)
            } else if let bufferSize = options.bufferSize, case .memory = library.storage {
                library.storage = .memory(capacity: bufferSize)
            }
            library.endpoints = try options.endpoints(first: configuration.url)
            library.endpointChoice = options.endpointChoice ?? .failover
            library.stateFile = stateFile.map { URL(fileURLWithPath: $0) }
            library.forgetSourcesAfter = forgetSourcesAfter
            return .success(try StreamUploader(configuration, options: library, onEvent: onEvent))
        } catch let error as StreamUpError where error.code == .io {
            say("\(error)")
            return .failure(NotMade(status: ExitStatus.ioFailure))
        } catch {
            say("\(error)")
            return .failure(NotMade(status: ExitStatus.usage))
        }
    }

    /// Gives `metrics` the counts of `uploader` (and of the files `files` follows and the
    /// records `filter` left out or masked) and serves them when `--metrics` asks (a command
    /// alone); after one line on stderr, the exit status when it cannot listen.
    func serveMetrics(_ metrics: Metrics?, uploader: StreamUploader, files: FileTailer?, filter: RecordFilter? = nil) -> Result<SinkServer?, NotMade> {
        guard let metrics else { return .success(nil) }
        // Weak: the uploader's events hold `metrics`, so a strong capture would keep both alive
        // for good (in `streamup run`, a removed pipeline's spool locked until the process ends).
        metrics.attach { [weak uploader] in
            guard let uploader else { return Metrics.Gauges() }
            var gauges = uploader.metricGauges
            gauges.filesFollowed = files?.followedFileCount
            gauges.recordsDropped = filter?.dropped.value
            gauges.recordsMasked = filter?.masked.value
            return gauges
        }
        guard case .alone = supervision else { return .success(nil) }
        do {
            guard let server = try options.metrics.server(for: metrics) else { return .success(nil) }
            // A port picked by the system must be said; a chosen one only with -v.
            if options.metrics.port == 0 || options.verbose {
                say("serving metrics on \(server.urlString)metrics and health on \(server.urlString)health")
            }
            return .success(server)
        } catch {
            say("--metrics: \(error)")
            return .failure(NotMade(status: ExitStatus.usage))
        }
    }

    /// SIGINT/SIGTERM: one line saying what the stop waits for, then `stop` (a graceful end of
    /// the input), bounded by the shutdown timeout (then exit 2 with one line); a second signal
    /// says what stopping at once loses or where it is kept.
    private func installSignals(for uploader: StreamUploader, stop: @escaping @Sendable () -> Void) {
        let timeout = options.shutdownTimeout ?? UploadOptions.defaultShutdownTimeout
        SignalHandling.installStop(
            onFirst: { name, _ in
                let held = uploader.meterCounts.waiting
                let what = held > 0 ? "delivering the \(counted(held, "byte")) still held" : "nothing is held, ending the upload"
                Terminal.error("stopping (\(name)): \(what), waiting at most \(UploadRunner.short(timeout)) \(SignalHandling.secondStops)")
                stop()
                SignalHandling.exitLater(after: timeout, status: ExitStatus.noAnswer) {
                    Terminal.error("no answer within the shutdown timeout (\(UploadRunner.short(timeout))); exiting: \(uploader.abortLine)")
                }
            }, onSecond: { uploader.abortLine })
    }
}
