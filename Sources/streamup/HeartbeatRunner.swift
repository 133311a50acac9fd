import Foundation
import StreamUp

/// Runs the heartbeat command.
///
/// Thread safety: runs on the main task; the child process is watched on Foundation's queue.
enum HeartbeatRunner {
    static func run(_ options: HeartbeatOptions) async -> Int32 {
        let stop = HeartbeatStop()
        let producer = HeartbeatProducer(
            every: options.every, count: options.count, fields: options.fields.map { ($0.name, $0.value) }, stop: stop)
        let formatter: RecordFormatter?
        do {
            formatter = try options.upload.recordFormatter()
        } catch {
            Terminal.error("heartbeat: \(error)")
            return ExitStatus.usage
        }
        guard !options.command.isEmpty else {
            return await UploadRunner.withTarget(options.upload) { url in
                await upload(producer, formatter: formatter, options, to: url) {
                    stop.stop(final: [("event", .string("stop"))])
                }
            }
        }
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        child.arguments = options.command
        // The job gets streamup's environment, but not the password meant for -u.
        child.environment = ProcessInfo.processInfo.environment.filter { $0.key != AuthOptions.passwordVariable }
        let started = ContinuousClock.now
        child.terminationHandler = { process in
            let seconds = (ContinuousClock.now - started).seconds
            let status = process.terminationReason == .uncaughtSignal ? 128 + Int(process.terminationStatus) : Int(process.terminationStatus)
            stop.stop(final: [
                ("event", .string("exit")), ("command", .string(options.command.joined(separator: " "))),
                ("exit_status", .int(status)), ("duration_s", .double(seconds)),
            ])
        }
        do {
            try child.run()
        } catch {
            Terminal.error("cannot run '\(options.command.joined(separator: " "))': \(error.localizedDescription)")
            return 127
        }
        let uploadStatus = await UploadRunner.withTarget(options.upload) { url in
            await upload(producer, formatter: formatter, options, to: url) {
                if child.isRunning { child.terminate() }
            }
        }
        child.waitUntilExit()
        let commandStatus = child.terminationReason == .uncaughtSignal ? 128 + child.terminationStatus : child.terminationStatus
        // The command's status is what a job runner needs; a failed upload shows only when the
        // command itself succeeded.
        return commandStatus != 0 ? commandStatus : uploadStatus
    }

    /// Uploads the beats, as records of `formatter` when one is given (a preset's shape).
    private static func upload(
        _ producer: HeartbeatProducer<ContinuousClock>, formatter: RecordFormatter?, _ options: HeartbeatOptions, to url: String,
        onSignal: @escaping @Sendable () -> Void
    ) async -> Int32 {
        guard let formatter else { return await UploadRunner.upload(options.upload, to: url, producer: producer, onSignal: onSignal).status }
        return await UploadRunner.upload(options.upload, to: url, producer: FormattingProducer(producer, formatter: formatter), onSignal: onSignal).status
    }
}
