// A heartbeat monitor for a job: beat every 500 ms while the work runs, then send a final
// record with the outcome. A monitoring endpoint sees one long NDJSON stream per job.
//
//   swift run example-heartbeat-monitor [URL]      # without URL: a local sink
import Foundation
import StreamUp
import StreamUpSink

let sink = CommandLine.arguments.count > 1 ? nil : try SinkServer(configuration: SinkConfiguration(keepBodiesInMemory: true))
sink?.start()
let url = try UploadConfiguration.url(from: CommandLine.arguments.dropFirst().first ?? sink!.urlString)

var configuration = UploadConfiguration(url: url)
configuration.contentType = "application/x-ndjson"
let uploader = try StreamUploader(configuration)

let stop = HeartbeatStop()
let heartbeat = HeartbeatProducer(every: .milliseconds(500), fields: [("job", "nightly-report")], stop: stop)

// The "job": two seconds of work, then the heartbeat ends with its result.
Task {
    let started = ContinuousClock.now
    try await Task.sleep(for: .seconds(2))
    stop.stop(final: [("event", .string("done")), ("rows", .int(12_345)), ("duration_s", .double((ContinuousClock.now - started) / .seconds(1)))])
}

let response = try await uploader.run(heartbeat)
print("server answered \(response.statusCode): \(response.bodyText)")
if let body = sink?.requests.last?.body { print(String(decoding: body, as: UTF8.self), terminator: "") }
sink?.stop()
