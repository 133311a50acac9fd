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
        let listening = "listening on \(server.url.absoluteString.trimmingSuffix("/"))"
        if options.port == 0 {
            // A port the system picked is known only from this line: a sink nobody can reach is
            // no use.
            switch Output.standardOutput.write(listening + "\n") {
            case .written:
                break
            case .failed, .failedBefore:
                server.stop()
                let why = Output.standardOutput.failedErrno.map { Output.standardOutput.words(for: $0) } ?? "stdout failed"
                Terminal.error("sink: nobody can learn the port picked: \(why); give --port PORT to choose one")
                return ExitStatus.ioFailure
            }
        } else {
            Terminal.log(listening)
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            SignalHandling.installStop { _, _ in continuation.resume() }
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
