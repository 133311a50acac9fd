import Foundation
import StreamUp

/// Entry point: parse argv, run the command, exit with its status.
SignalHandling.ignoreSIGPIPE()
let status: Int32
do {
    switch try CommandLineParser.parse(Array(CommandLine.arguments.dropFirst())) {
    case .help(let text):
        print(text)
        status = ExitStatus.success
    case .version:
        print("streamup \(StreamUpVersion.current)")
        status = ExitStatus.success
    case .upload(let options):
        status = await UploadRunner.run(options)
    case .sink(let options):
        status = await SinkRunner.run(options)
    case .heartbeat(let options):
        status = await HeartbeatRunner.run(options)
    case .tail(let options):
        status = await TailRunner.run(options)
    }
} catch {
    Terminal.error("\(error)")
    status = ExitStatus.usage
}
exit(status)
