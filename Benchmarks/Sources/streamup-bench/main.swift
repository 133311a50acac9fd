import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Entry point: `streamup-bench [--rounds N] [--bytes SIZE] [--quick] [--big | --no-big] …`
/// (see ``BenchOptions/usage``). Progress goes to stderr; the Markdown report to stdout. Exit
/// status 3 when any run did not count (the report lists them), so CI's smoke run can fail.
/// `streamup-bench --bare-upload URL BYTES`, `--bare-pipe-upload URL`, `--bare-segments-upload URL
/// BYTES SEGMENT` and `--bare-post URL COUNT`
/// are the bench's own children (``BareUploader``, ``BarePoster``); `--soak …` runs the soak
/// workloads (``SoakCommand``).
signal(SIGPIPE, SIG_IGN)
let arguments = Array(CommandLine.arguments.dropFirst())
if let mode = arguments.first, BareUploader.flags.contains(mode) {
    exit(BareUploader.run(mode, Array(arguments.dropFirst())))
}
if arguments.first == BarePoster.flag {
    exit(BarePoster.run(Array(arguments.dropFirst())))
}
if arguments.first == SoakCommand.flag {
    exit(SoakCommand.run(Array(arguments.dropFirst())))
}
do {
    guard let options = try BenchOptions.parse(arguments) else {
        print(BenchOptions.usage)
        exit(0)
    }
    let binaries = try Binaries.locate(streamup: options.streamup)
    let machine = MachineInfo.collect(binaries: binaries)
    let results = try Benchmark(options: options, binaries: binaries, syslogNG: machine.syslogNG, fluentBitLacks: machine.fluentBitLacks).run()
    print(Report.render(results, options: options, arguments: arguments, machine: machine))
    if results.failedRuns > 0 {
        FileHandle.standardError.write(Data("streamup-bench: \(results.failedRuns) runs did not count (listed in the report)\n".utf8))
        exit(3)
    }
} catch {
    FileHandle.standardError.write(Data("streamup-bench: \(error)\n".utf8))
    exit(error.description.hasPrefix("no streamup binary") ? 2 : 1)
}
