import Foundation
import StreamUpSink

/// Runs the sink command.
///
/// Thread safety: runs on the main task; the sink's callbacks only print.
enum SinkRunner {
    static func run(_ options: SinkOptions) async -> Int32 {
        var configuration = SinkConfiguration()
        configuration.host = options.host
        configuration.port = options.port
        configuration.outputDirectory = options.outputDirectory
        configuration.maxConnections = options.maxConnections
        configuration.idleTimeout = options.idleTimeout
        configuration.hashBodies = options.hashBodies
        configuration.maxBodyBytes = options.maxBodyBytes
        configuration.headTimeout = options.headTimeout
        configuration.minimumBodyRate = options.minimumBodyBytesPerSecond.map {
            SinkBodyRate(bytesPerSecond: $0, window: options.bodyRateWindow, grace: options.bodyRateWindow)
        }
        configuration.maxUploads = options.maxUploads
        configuration.uploadExpiry = options.uploadExpiry
        configuration.faults = options.faults
        configuration.sendsUploadResumptionSupported = options.sendsUploadResumptionSupported
        let server: SinkServer
        do {
            server = try SinkServer(configuration: configuration, onEvent: logLine)
            server.start()
        } catch {
            Terminal.error("sink: \(error)")
            return ExitStatus.ioFailure
        }
        Terminal.log("listening on \(server.url.absoluteString.trimmingSuffix("/"))")
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            SignalHandling.install { _, _ in continuation.resume() }
        }
        server.stop()
        return ExitStatus.success
    }

    @Sendable private static func logLine(_ event: SinkRequestEvent) {
        let seconds = String(format: "%.3f", event.duration.seconds)
        var line = "\(event.method) \(event.path) \(event.bodyByteCount) \(seconds) \(event.status)"
        if let file = event.storedFile { line += " \(file)" }
        if let offset = event.uploadOffset { line += " upload-offset=\(offset)" }
        if !event.isComplete { line += " incomplete" + (event.failure.map { ": \($0)" } ?? "") }
        Terminal.log(line)
    }
}
