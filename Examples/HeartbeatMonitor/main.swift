// A heartbeat monitor for a job: the job's telemetry emitter beats every 500 ms while the
// work runs, on the same stream as the job's own events, then sends a final record with the
// outcome. No second uploader: the beats ride on the emitter's segments.
//
//   swift run example-heartbeat-monitor [URL]      # without URL: a local sink
import Foundation
import StreamUp
import StreamUpSink

let sink = CommandLine.arguments.count > 1 ? nil : try SinkServer(configuration: SinkConfiguration(keepBodiesInMemory: true))
sink?.start()
let url = try UploadConfiguration.url(from: CommandLine.arguments.dropFirst().first ?? sink!.urlString)

let emitter = try TelemetryEmitter(url: url)
emitter.startHeartbeat(every: .milliseconds(500), fields: [("job", "nightly-report")])

// The "job": two seconds of work with an event per step, then its result.
let started = ContinuousClock.now
for step in 1...4 {
    try await Task.sleep(for: .milliseconds(500))
    try await emitter.emit(["job": "nightly-report", "step": "\(step)"])
}
try await emitter.emit([
    "job": "nightly-report", "event": "done", "rows": "12345",
    "duration_s": String(format: "%.3f", (ContinuousClock.now - started) / .seconds(1)),
])

let response = try await emitter.finish(within: .seconds(5))
print("server answered \(response?.statusCode ?? 0), \(emitter.metrics.accepted) records and the beats")
for request in sink?.requests ?? [] {
    if let body = request.body { print(String(decoding: body, as: UTF8.self), terminator: "") }
}
sink?.stop()
