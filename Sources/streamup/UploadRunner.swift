import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import StreamUp
import StreamUpSink

/// Runs `streamup [options] [URL]`: stdin → one chunked request → exit status from the answer.
///
/// Thread safety: runs on the main task; callbacks only print.
enum UploadRunner {
    static func run(_ options: UploadOptions) async -> Int32 {
        if let url = options.url {
            return await upload(options, to: url)
        }
        return await uploadToEmbeddedSink(options)
    }

    /// The dry run: a sink on 127.0.0.1, stdin streamed to it, its record printed on stdout.
    private static func uploadToEmbeddedSink(_ options: UploadOptions) async -> Int32 {
        let sink: SinkServer
        do {
            sink = try SinkServer(configuration: SinkConfiguration())
            sink.start()
        } catch {
            Terminal.error("cannot start the local sink: \(error)")
            return ExitStatus.noAnswer
        }
        defer { sink.stop() }
        Terminal.info("no URL given: streaming stdin to a local sink at \(sink.url) (Ctrl-D ends the body)")
        let status = await upload(options, to: sink.url.absoluteString, printAnswer: true)
        return status
    }

    private static func upload(_ options: UploadOptions, to urlText: String, printAnswer: Bool = false) async -> Int32 {
        let uploader: StreamUploader
        do {
            var configuration = UploadConfiguration(url: try UploadConfiguration.url(from: urlText))
            configuration.method = options.method
            configuration.contentType = options.contentType
            configuration.headers = options.headers
            configuration.bufferSize = options.bufferSize
            configuration.responseTimeout = options.responseTimeout.seconds
            let verbose = options.verbose
            uploader = try StreamUploader(configuration) { event in
                if verbose { logEvent(event) }
            }
        } catch {
            Terminal.error("\(error)")
            return ExitStatus.usage
        }
        SignalHandling.install { uploader.finish() }
        let ticker = options.verbose ? ProgressTicker(uploader: uploader) : nil
        defer { ticker?.stop() }
        do {
            let response = try await uploader.run(FileDescriptorProducer(fileDescriptor: 0))
            ticker?.stop()
            if options.verbose {
                Terminal.info("* sent \(response.bytesSent) bytes; server answered \(response.statusCode)")
            }
            guard response.isSuccess else {
                let start = response.bodyText.prefix(500).trimmingCharacters(in: .whitespacesAndNewlines)
                Terminal.error("server answered \(response.statusCode) \(HTTPURLResponse.localizedString(forStatusCode: response.statusCode))" + (start.isEmpty ? "" : ": \(start)"))
                return ExitStatus.httpFailure
            }
            if printAnswer { Terminal.output(response.bodyText.trimmingCharacters(in: .whitespacesAndNewlines)) }
            return ExitStatus.success
        } catch {
            Terminal.error("\(error)")
            return ExitStatus.noAnswer
        }
    }

    private static func logEvent(_ event: UploadEvent) {
        switch event {
        case .requestStarted(let method, let url, let headers):
            Terminal.info("> \(method) \(url.absoluteString)")
            for header in headers { Terminal.info("> \(header.name): \(header.value)") }
            Terminal.info("> Transfer-Encoding: chunked")
        case .responseReceived(let status, let headers):
            Terminal.info("< \(status) \(HTTPURLResponse.localizedString(forStatusCode: status))")
            for (name, value) in headers.sorted(by: { $0.key < $1.key }) { Terminal.info("< \(name): \(value)") }
        case .redirectRefused(let status, let location):
            Terminal.info("* not following the \(status) redirect to \(location ?? "?"): a live body cannot be sent twice")
        }
    }
}

/// Prints progress on stderr once a second while an upload runs (`-v`).
///
/// Thread safety: the timer fires on its own serial queue; `stop` may be called from anywhere
/// (dispatch sources are thread-safe, though the protocol does not say `Sendable`).
final class ProgressTicker: @unchecked Sendable {
    private let timer: DispatchSourceTimer

    init(uploader: StreamUploader) {
        let started = Date()
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "streamup.progress"))
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.setEventHandler {
            let progress = uploader.progress
            let seconds = Date().timeIntervalSince(started)
            let rate = Double(progress.bytesSent) / max(seconds, 0.001) / 1_000_000
            Terminal.info(String(format: "* %.0fs: read %d bytes, sent %d, buffered %d (%.1f MB/s)", seconds, progress.bytesProduced, progress.bytesSent, progress.bytesBuffered, rate))
        }
        timer.resume()
    }

    func stop() { timer.cancel() }
}

extension Duration {
    /// The duration in seconds, as `TimeInterval`.
    var seconds: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
