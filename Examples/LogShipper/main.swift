// A log shipper in a few lines: follow a log file like `tail -F` and stream every appended
// line to an ingest endpoint in acknowledged segments, retried for ever, with what is not yet
// acknowledged kept in a spool on disk and the position remembered across restarts: every
// line arrives once, even after kill -9.
//
//   swift run example-log-shipper /var/log/app.log https://logs.example/ingest
//   swift run example-log-shipper /var/log/app.log          # to a local sink, prints its record
import Foundation
import StreamUp
import StreamUpSink
import StreamUpTail

let arguments = CommandLine.arguments.dropFirst()
guard let logPath = arguments.first else {
    print("usage: example-log-shipper LOGFILE [URL]")
    exit(64)
}

// Without a URL, ship to a local sink so the example runs anywhere.
let sink = arguments.count > 1 ? nil : try SinkServer(configuration: SinkConfiguration())
sink?.start()
let url = try UploadConfiguration.url(from: arguments.dropFirst().first ?? sink!.urlString)

// Follows the file by its name: a file rotated away is read to its end, then the new one.
var tailing = FileTailer.Options()
tailing.startAt = .beginning
let tailer = try FileTailer(patterns: [logPath], options: tailing)

var configuration = UploadConfiguration(url: url)
configuration.contentType = "text/plain; charset=utf-8"
configuration.headers = [.init(name: "X-Log-Source", value: ProcessInfo.processInfo.hostName)]
var options = StreamUploader.Options()
options.storage = .spool(directory: URL(fileURLWithPath: logPath + ".streamup-spool"))  // survives a crash; sent first on the next start
options.stateFile = URL(fileURLWithPath: logPath + ".streamup-state")  // where the file stands: each line once, even after kill -9
options.retry.maxRetries = nil  // a daemon: never give up
let uploader = try StreamUploader(configuration, options: options)

// Ctrl-C ends the stream gracefully: what was read is sent, then the server answers.
signal(SIGINT, SIG_IGN)
let interrupt = DispatchSource.makeSignalSource(signal: SIGINT)
interrupt.setEventHandler { uploader.finish() }
interrupt.resume()

print("shipping \(logPath) to \(url); Ctrl-C to stop")
let response = try await uploader.run(tailer)
print("server answered \(response.statusCode): \(response.bodyText)")
sink?.stop()
