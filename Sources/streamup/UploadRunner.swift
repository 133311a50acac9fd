import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import StreamUp

/// Runs `streamup [options] [URL]`: stdin → one chunked request → exit status from the answer.
///
/// Thread safety: runs on the main task; callbacks only print.
enum UploadRunner {
    static func run(_ options: UploadOptions) async -> Int32 {
        await withTarget(options) { url in
            await upload(options, to: url, producer: FileDescriptorProducer(fileDescriptor: 0)).status
        }
    }

    /// Runs `body` with the URL to upload to: `options.url`, or without one, a local sink that
    /// prints what it stored at the end (the dry run, ``LocalSink``).
    static func withTarget(_ options: UploadOptions, _ body: (_ url: String) async -> Int32) async -> Int32 {
        if let url = options.url { return await body(url) }
        return await LocalSink.run(output: options.outputFile, body)
    }

    /// Streams `producer` to `urlText` with the options' headers and limits; SIGINT/SIGTERM call
    /// `onSignal` (by default a graceful finish). With delivery options, `prepare` sees the
    /// reliable uploader before it runs. Returns the exit status and the answer, if any.
    static func upload(
        _ options: UploadOptions, to urlText: String, producer: some Producer,
        onSignal: (@Sendable () -> Void)? = nil, onSecured: @escaping @Sendable (Int) -> Void = { _ in },
        prepare: (ReliableUploader) -> Void = { _ in }
    ) async -> (status: Int32, response: UploadResponse?) {
        let uploader: any Upload
        do {
            var configuration = UploadConfiguration(url: try UploadConfiguration.url(from: urlText))
            configuration.method = options.method
            configuration.contentType = options.contentType
            configuration.headers = options.headers
            configuration.bufferSize = options.bufferSize
            configuration.responseTimeout = options.responseTimeout.seconds
            let verbose = options.verbose
            let onEvent: @Sendable (UploadEvent) -> Void = { event in
                if verbose { logEvent(event) }
            }
            if let delivery = options.delivery {
                let reliable = try ReliableUploader(
                    configuration, options: delivery.libraryOptions, onEvent: onEvent, onSecured: onSecured)
                prepare(reliable)
                uploader = reliable
            } else {
                uploader = try StreamUploader(configuration, onEvent: onEvent)
            }
        } catch let error as StreamUpError where error.code == .io {
            Terminal.error("\(error)")
            return (ExitStatus.noAnswer, nil)
        } catch {
            Terminal.error("\(error)")
            return (ExitStatus.usage, nil)
        }
        let shutdownTimeout = options.shutdownTimeout
        SignalHandling.install {
            onSignal?() ?? uploader.finish()
            SignalHandling.exitLater(after: shutdownTimeout, status: ExitStatus.noAnswer) {
                Terminal.error("no answer within the shutdown timeout (\(shutdownTimeout)); exiting")
                reportUnacknowledged(uploader)
            }
        }
        let ticker = options.verbose ? ProgressTicker(uploader: uploader) : nil
        defer { ticker?.stop() }
        do {
            let response = try await uploader.run(producer)
            ticker?.stop()
            if options.verbose {
                Terminal.info("* \(uploader.progressLine); server answered \(response.statusCode)")
            }
            guard response.isSuccess else {
                Terminal.error(AnswerReport.failureLine(response, requestURL: URL(string: urlText)))
                reportUnacknowledged(uploader)
                return (ExitStatus.httpFailure, response)
            }
            // A dry run prints the local sink's summary instead (LocalSink).
            return (options.url == nil ? ExitStatus.success : AnswerReport.printSuccess(response, to: options.outputFile), response)
        } catch {
            Terminal.error("\(error)")
            reportUnacknowledged(uploader)
            return (ExitStatus.noAnswer, nil)
        }
    }

    /// After a failed upload, says what became of the bytes the server did not acknowledge.
    private static func reportUnacknowledged(_ uploader: any Upload) {
        if let line = uploader.unacknowledgedLine { Terminal.error(line) }
    }

    private static func logEvent(_ event: UploadEvent) {
        switch event {
        case .requestStarted(let method, let url, let headers):
            Terminal.info("> \(method) \(url.absoluteString)")
            for header in headers { Terminal.info("> \(header.name): \(header.value)") }
        case .responseReceived(let status, let headers):
            let reason = status == 104 ? "Upload Resumption Supported" : HTTPURLResponse.localizedString(forStatusCode: status)
            Terminal.info("< \(status) \(reason)")
            for (name, value) in headers.sorted(by: { $0.key < $1.key }) { Terminal.info("< \(name): \(value)") }
        case .redirectRefused(let status, let location):
            Terminal.info("* not following the \(status) redirect to \(location ?? "?"): a live body cannot be sent twice")
        case .retrying(let reason, let delay):
            Terminal.info("* \(reason); trying again in \(delay.formatted(.units(allowed: [.seconds, .milliseconds], width: .narrow)))")
        case .notice(let text):
            Terminal.info("* \(text)")
        }
    }
}

/// Prints progress on stderr once a second while an upload runs (`-v`).
///
/// Thread safety: the timer fires on its own serial queue; `stop` may be called from anywhere
/// (dispatch sources are thread-safe, though the protocol does not say `Sendable`).
final class ProgressTicker: @unchecked Sendable {
    private let timer: DispatchSourceTimer

    init(uploader: any Upload) {
        let started = Date()
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "streamup.progress"))
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.setEventHandler {
            Terminal.info(String(format: "* %.0fs: ", Date().timeIntervalSince(started)) + uploader.progressLine)
        }
        timer.resume()
    }

    func stop() { timer.cancel() }
}

/// The two ways the CLI uploads: one request, or acknowledged segments with retries.
///
/// Thread safety: both uploaders are callable from any thread.
protocol Upload: Sendable {
    func run(_ producer: some Producer) async throws -> UploadResponse
    func finish()
    /// Progress in words, for `-v`.
    var progressLine: String { get }
    /// What became of bytes the server did not acknowledge, when the upload failed (nil: nothing to say).
    var unacknowledgedLine: String? { get }
}

extension StreamUploader: Upload {
    var progressLine: String {
        let progress = self.progress
        return "read \(progress.bytesProduced) bytes, sent \(progress.bytesSent), buffered \(progress.bytesBuffered)"
    }

    var unacknowledgedLine: String? { nil }
}

extension ReliableUploader: Upload {
    var progressLine: String {
        let progress = self.progress
        let recovered = recoveredBytes > 0 ? ", \(recoveredBytes) from the spool" : ""
        let paused = progress.pauses > 0 ? String(format: ", paused %d times (%.1f s)", progress.pauses, progress.pausedSeconds) : ""
        return "read \(progress.produced) bytes\(recovered), acknowledged \(progress.acknowledged), held \(progress.held), resent \(progress.resent), retries \(progress.retries)\(paused)"
    }

    var unacknowledgedLine: String? {
        let held = progress.held
        guard held > 0 else { return nil }
        if let spool = options.spoolDirectory {
            return "\(held) bytes the server did not acknowledge are kept in \(spool); the next start with --spool \(spool) sends them first"
        }
        return "\(held) bytes read were not acknowledged by the server and are lost (--spool DIR keeps them for the next start)"
    }
}

extension UploadOptions.DeliveryOptions {
    /// The library's options with these overrides.
    var libraryOptions: ReliableUploader.Options {
        var options = ReliableUploader.Options()
        if let retries { options.retry.maxRetries = retries }
        options.retry.maxRetryTime = retryMaxTime
        if let segmentBytes { options.segmentBytes = segmentBytes }
        if let segmentDuration { options.segmentDuration = segmentDuration }
        if let replayBytes { options.replayCapacity = max(replayBytes, options.segmentBytes) }
        options.spoolDirectory = spoolDirectory
        if let spoolBytes { options.spoolCapacity = max(spoolBytes, options.segmentBytes) }
        options.resumable = resumable
        if let retryStatuses { options.retry.retryableStatuses = retryStatuses }
        return options
    }
}

extension Duration {
    /// The duration in seconds, as `TimeInterval`.
    var seconds: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
