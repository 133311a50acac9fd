// A custom producer in a few lines: anything that conforms to `Producer` can feed an upload.
// This one streams a metric sample every 100 ms until it has sent `samples` of them; the
// writer suspends while the buffer is full, so a slow server simply slows it down.
//
//   swift run example-custom-producer [URL]      # without URL: a local sink
import Foundation
import StreamUp
import StreamUpSink

struct LoadAverageProducer: Producer {
    let samples: Int

    func produce(into writer: StreamWriter) async throws {
        for sample in 1...samples {
            let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first ?? "0"
            try await writer.write(Array("sample=\(sample) load1=\(load)\n".utf8))
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}

let sink = CommandLine.arguments.count > 1 ? nil : try SinkServer(configuration: SinkConfiguration(keepBodiesInMemory: true))
sink?.start()
let url = try UploadConfiguration.url(from: CommandLine.arguments.dropFirst().first ?? sink!.urlString)

// One live request (the samples are on the wire as they are written); leave out `options`
// for acknowledged segments, which are retried.
let uploader = try StreamUploader(UploadConfiguration(url: url), options: .singleRequest)
let response = try await uploader.run(LoadAverageProducer(samples: 10))
print("server answered \(response.statusCode): \(response.bodyText)")
if let body = sink?.requests.last?.body { print(String(decoding: body, as: UTF8.self), terminator: "") }
sink?.stop()
