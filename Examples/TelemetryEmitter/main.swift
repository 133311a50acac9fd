// An app emitting telemetry events with bounded backpressure: when the server is slower than the
// app, `emit` waits for room at most 100 ms, then drops the record (counted and reported);
// `tryEmit` never waits. Records go out as acknowledged segments (about one request a second),
// retried for as long as the app runs if the server fails.
//
//   swift run example-telemetry-emitter [URL]      # without URL: a local sink
import Foundation
import StreamUp
import StreamUpSink

struct RequestServed: Encodable {
    let route: String
    let status: Int
    let milliseconds: Double
    let at: Date  // RFC 3339 in UTC with milliseconds
}

let sink = CommandLine.arguments.count > 1 ? nil : try SinkServer(configuration: SinkConfiguration())
sink?.start()
let url = try UploadConfiguration.url(from: CommandLine.arguments.dropFirst().first ?? sink!.urlString)

var options = TelemetryEmitter.Options()
options.whenFull = .wait(atMost: .milliseconds(100))
let emitter = try TelemetryEmitter(url: url, headers: [.init(name: "X-Service", value: "checkout")], options: options)

// Ten workers emit concurrently; every record goes out as one whole NDJSON line.
try await withThrowingTaskGroup(of: Void.self) { group in
    for worker in 0..<10 {
        group.addTask {
            for request in 0..<1_000 {
                try await emitter.emit(
                    RequestServed(
                        route: "/cart/\(worker)", status: request % 50 == 0 ? 500 : 200,
                        milliseconds: Double(request % 97) / 3, at: Date()))
            }
        }
    }
    try await group.waitForAll()
}
// Best-effort events never block the caller.
for _ in 0..<100 { emitter.tryEmit(["event": "cache-miss"]) }

// At shutdown: deliver what is buffered, but give up (and say so) after five seconds.
let response = try await emitter.finish(within: .seconds(5))
let metrics = emitter.metrics
print("accepted \(metrics.accepted), dropped \(metrics.dropped), sent \(metrics.bytesSent) bytes")
if let response { print("server answered \(response.statusCode): \(response.bodyText)") }
sink?.stop()
