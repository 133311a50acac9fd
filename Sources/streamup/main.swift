import Foundation
import StreamUp
import StreamUpSystem

/// Entry point: parse argv, check what only the running process can tell, run the command,
/// exit with its status. Started as the exec shim, it becomes the command it was given instead.
ExecShim.execIfAsked()
_ = ProcessMetrics.startTime
// Many files and pipelines need more descriptors than the soft 1,024 most systems start with;
// below a few dozen not even the process's own machinery starts (libdispatch traps).
let descriptors = DescriptorLimit.raiseToHard()
if descriptors.soft < DescriptorLimit.least {
    Terminal.error(
        "this process may open only \(descriptors.soft) files (RLIMIT_NOFILE), and streamup needs at least \(DescriptorLimit.least): raise the limit (ulimit -n, LimitNOFILE= in a systemd unit); nothing was sent"
    )
    exit(ExitStatus.usage)
}
StandardDescriptors.reserve()
SignalHandling.ignoreStraySignals()
let status: Int32
do {
    switch try CommandLineParser.parse(Array(CommandLine.arguments.dropFirst())) {
    case .help(let text):
        status = ResultOutput.writeLine(text, what: "the help text")
    case .version:
        status = ResultOutput.writeLine("streamup \(StreamUpVersion.current)", what: "the version")
    case .upload(let options):
        try StartCheck.refuse(StandardDescriptors.closedStdinProblem ?? options.outputProblem)
        status = await UploadRunner.run(options)
    case .sink(let options):
        status = await SinkRunner.run(options)
    case .heartbeat(let options):
        try StartCheck.refuse(options.upload.outputProblem)
        status = await HeartbeatRunner.run(options)
    case .tail(let options):
        try StartCheck.refuse(options.upload.outputProblem)
        status = await TailRunner.run(options)
    case .journal(let options):
        try StartCheck.refuse(options.upload.outputProblem)
        status = await JournalRunner.run(options)
    case .run(let options):
        status = await RunRunner.run(options)
    }
} catch {
    Terminal.error("\(error)")
    status = ExitStatus.usage
}
exit(status)
