import Foundation
import StreamUp
import StreamUpSink
import StreamUpTestSupport
import Testing

extension InProcessUploads {
    /// The scoped forms: an uploader or emitter that lives exactly as long as one call, and the
    /// emitter taking the same ``UploadConfiguration`` as the uploaders.
    @Suite(.timeLimit(.minutes(1))) struct ScopedUploadTests {
        private struct Refused: Error {}

        /// `withUploader` with one live request: what the closure writes is the body, and the
        /// call returns the server's answer.
        @Test func withUploaderSendsWhatTheClosureWrites() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                let answer = try await StreamUploader.withUploader(UploadConfiguration(url: sink.url), options: .singleRequest) { writer in
                    for n in 0..<100 { try await writer.write(Array("line \(n)\n".utf8)) }
                }
                #expect(answer.statusCode == 200)
                #expect(sink.requests.last?.body == Array((0..<100).map { "line \($0)\n" }.joined().utf8))
            }
        }

        /// `StreamUploader.withUploader`: the same bytes as acknowledged segments, whole lines
        /// each, returned once all are acknowledged.
        @Test func reliableWithUploaderDeliversEverySegment() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                var options = StreamUploader.Options()
                options.segmentBytes = 1_000
                let answer = try await StreamUploader.withUploader(UploadConfiguration(url: sink.url), options: options) { writer in
                    for n in 0..<500 { try await writer.write(Array("line \(n)\n".utf8)) }
                }
                #expect(answer.isSuccess)
                let bodies = sink.requests.filter(\.isComplete).compactMap(\.body)
                #expect(bodies.count > 1, "one request: the segment limit was not applied")
                #expect(bodies.allSatisfy { $0.last == UInt8(ascii: "\n") })
                #expect(bodies.joined().elementsEqual(Array((0..<500).map { "line \($0)\n" }.joined().utf8)))
            }
        }

        /// A closure that throws fails the upload: neither form returns an answer as if the body
        /// were complete.
        @Test func aThrowingClosureFailsTheUpload() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                let configuration = UploadConfiguration(url: sink.url)
                await #expect(throws: StreamUpError.self) {
                    _ = try await StreamUploader.withUploader(configuration, options: .singleRequest) { writer in
                        try await writer.write(Array("half\n".utf8))
                        throw Refused()
                    }
                }
                await #expect(throws: StreamUpError.self) {
                    _ = try await StreamUploader.withUploader(configuration) { writer in
                        try await writer.write(Array("half\n".utf8))
                        throw Refused()
                    }
                }
            }
        }

        /// `TelemetryEmitter.withEmitter` with a configuration: its method, content type and
        /// headers are what the server sees, and the records arrive.
        @Test func withEmitterUsesTheConfigurationsRequest() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                var configuration = UploadConfiguration(url: sink.url.appendingPathComponent("events"))
                configuration.method = "PUT"
                configuration.contentType = "application/json-seq"
                configuration.headers = [.init(name: "X-Tenant", value: "t1")]
                let answer = try await TelemetryEmitter.withEmitter(configuration) { emitter in
                    for index in 0..<10 { try await emitter.emit(["index": index]) }
                }
                #expect(answer?.isSuccess == true)
                for request in sink.requests {
                    #expect(request.method == "PUT" && request.path == "/events")
                    #expect(request.headers.contains { $0.name.lowercased() == "content-type" && $0.value == "application/json-seq" })
                    #expect(request.headers.contains { $0.name == "X-Tenant" && $0.value == "t1" })
                }
                let body = sink.requests.sorted { $0.sequence < $1.sequence }.flatMap { $0.body ?? [] }
                #expect(body == Array((0..<10).map { "{\"index\":\($0)}\n" }.joined().utf8))
            }
        }

        /// A closure that throws cancels the emitter's upload, and its error is what the caller
        /// gets (not a server answer).
        @Test func withEmitterRethrowsAndCancels() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                await #expect(throws: Refused.self) {
                    _ = try await TelemetryEmitter.withEmitter(UploadConfiguration(url: sink.url)) { emitter in
                        try await emitter.emit(["event": "started"])
                        try await emitter.flush()  // the record is acknowledged
                        throw Refused()
                    }
                }
                // The flushed record went out; the cancel sent nothing more.
                #expect(sink.requests.count == 1)
            }
        }
    }
}
