import Foundation
import StreamUp
import StreamUpSink
import StreamUpTestSupport
import Testing

/// A producer that writes given chunks, then optionally waits (idle, as a quiet log does) until
/// cancelled.
struct ChunksProducer: Producer {
    let chunks: [[UInt8]]
    var thenIdle = false
    var thenFail = false
    /// Runs after the chunks are written, before failing or idling: a test waits there until
    /// the receiver has the bytes.
    var afterChunks: @Sendable () async throws -> Void = {}

    func produce(into writer: StreamWriter) async throws {
        for chunk in chunks { try await writer.write(chunk) }
        try await afterChunks()
        if thenFail { throw TestFailure() }
        if thenIdle {
            // Suspend until cancelled: the uploader cancels its producer on finish/cancel.
            try await Task.sleep(for: .seconds(3600))
        }
    }
}

struct TestFailure: Error {}

/// Writes `records`, the entries `first`, `first + 1`, … of a sequence source (as the journal
/// does).
struct SequenceProducer: PositionedProducer {
    let records: [String]
    let source: SourceID
    let first: Int64

    func resume(from positions: [SourcePosition], savedAt: Date?) {}
    func path(of source: SourceID) -> String? { "p" }

    func produce(into writer: StreamWriter) async throws {
        let (records, source, first) = (records, source, first)
        try await writer.runBlocking { blocking in
            for (index, record) in records.enumerated() {
                let number = first + Int64(index)
                try blocking.write(Array(record.utf8), mark: SourceMark(source: source, start: number, end: number + 1))
            }
        }
    }
}

extension InProcessUploads {
    @Suite(.timeLimit(.minutes(2))) struct StreamUploaderTests {
        private func configuration(_ url: URL) -> UploadConfiguration {
            UploadConfiguration(url: url.appendingPathComponent("upload"))
        }

        /// The producer's bytes arrive whole; the answer and the progress counters agree.
        @Test func producerBytesArriveAndTheAnswerIsReturned() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                let chunks = (0..<100).map { index in Array("record \(index)\n".utf8) }
                let uploader = try StreamUploader(configuration(sink.url), options: .singleRequest)
                let response = try await uploader.run(ChunksProducer(chunks: chunks))
                #expect(response.isSuccess)
                #expect(response.bodyText.contains("\"bytes\":\(chunks.joined().count)"))
                #expect(uploader.progress.produced == chunks.joined().count && uploader.progress.acknowledged == chunks.joined().count)
                #expect(sink.requests.last?.body == Array(chunks.joined()))
                // An uploader runs once.
                let again = await #expect(throws: StreamUpError.self) { try await uploader.run(ChunksProducer(chunks: [])) }
                #expect(again?.code == .invalidConfiguration)
            }
        }

        /// `finish()` on an idle stream sends what was written, ends the body and returns the answer.
        @Test func finishEndsAnIdleStreamGracefully() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                let uploader = try StreamUploader(configuration(sink.url), options: .singleRequest)
                let running = Task { try await uploader.run(ChunksProducer(chunks: [Array("kept\n".utf8)], thenIdle: true)) }
                try #require(await eventually { uploader.progress.acknowledged >= 5 })
                uploader.finish()
                let response = try await running.value
                #expect(response.isSuccess)
                #expect(sink.requests.last?.body == Array("kept\n".utf8))
            }
        }

        /// `cancel()` while the body waits for bytes wakes the reader: `run` throws `.cancelled`
        /// instead of hanging, and the sink sees an incomplete body, not a complete one.
        @Test func cancelWakesTheWaitingReaderAndFails() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                let uploader = try StreamUploader(configuration(sink.url), options: .singleRequest)
                let running = Task { try await uploader.run(ChunksProducer(chunks: [Array("partial\n".utf8)], thenIdle: true)) }
                try #require(await eventually { uploader.progress.acknowledged >= 8 })
                uploader.cancel()
                let error = await #expect(throws: StreamUpError.self) { try await running.value }
                #expect(error?.code == .cancelled)
                // The request that carried the bytes ends, and not as a complete body.
                try #require(await eventually { !sink.requests.isEmpty })
                #expect(sink.requests.allSatisfy { !$0.isComplete })
            }
        }

        /// A producer that throws fails the upload with `.producerFailed`; the body is not ended
        /// as if complete.
        @Test func producerFailureFailsTheUpload() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                let uploader = try StreamUploader(configuration(sink.url), options: .singleRequest)
                // Given: the producer fails only once its byte is on the wire.
                let producer = ChunksProducer(
                    chunks: [Array("x".utf8)], thenFail: true,
                    afterChunks: {
                        try #require(await eventually { uploader.progress.acknowledged >= 1 })
                    })
                let error = await #expect(throws: StreamUpError.self) { try await uploader.run(producer) }
                #expect(error?.code == .producerFailed)
                // Then: the request that carried it ends, and not as a complete body.
                try #require(await eventually { !sink.requests.isEmpty })
                #expect(sink.requests.allSatisfy { !$0.isComplete })
            }
        }

        /// A non-2xx answer is a result, not an error.
        @Test func serverErrorIsAResultNotAnError() async throws {
            let server = try StubHTTPServer(.answerAfterBody(status: 503, headers: ["Retry-After: 1"], body: "busy"))
            defer { server.stop() }
            let uploader = try StreamUploader(UploadConfiguration(url: URL(string: server.url)!), options: .singleRequest)
            let response = try await uploader.run(ChunksProducer(chunks: [Array("x\n".utf8)]))
            #expect(response.statusCode == 503)
            #expect(response.bodyText == "busy")
            #expect(response.headers.first { $0.key.lowercased() == "retry-after" }?.value == "1")
        }

        /// Nothing listening: a `.transport` error that says the connection was refused.
        @Test func refusedConnectionIsATransportError() async throws {
            let uploader = try StreamUploader(UploadConfiguration(url: URL(string: "http://127.0.0.1:\(unusedLocalPort())/")!), options: .singleRequest)
            let error = await #expect(throws: StreamUpError.self) {
                try await uploader.run(ChunksProducer(chunks: [Array("x".utf8)]))
            }
            #expect(error?.code == .transport)
            #expect(error?.description.contains("refused") == true)
        }

        /// With a state file and the bytes in memory, an uploader given the stream id its state
        /// file saved goes on with that stream at the offset the saved positions stand for (a
        /// producer that makes the same bytes again from them, the journal, sends them at the
        /// offsets they had: the sink keeps one copy); another id starts a stream at 0.
        @Test(arguments: [("journal-1", 12), ("journal-2", 0)])
        func aStreamNamedAsSavedGoesOnAtItsSavedOffset(id: String, offset: Int) async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                try await withTemporaryDirectory { directory in
                    let stateFile = directory + "/state.json"
                    let source = SourceID.sequence("a")
                    try SourceState(streamID: "journal-1", streamOffset: 12, sources: [SourcePosition(source: source, path: "x", offset: 3)]).save(
                        to: stateFile)
                    var options = StreamUploader.Options()
                    options.stateFile = URL(fileURLWithPath: stateFile)
                    options.streamID = id
                    let uploader = try StreamUploader(configuration(sink.url), options: options)
                    #expect(try await uploader.run(SequenceProducer(records: ["four\n"], source: source, first: 3)).isSuccess)
                    let request = try #require(sink.requests.first)
                    #expect(request.headers.first(named: "Streamup-Stream-Id") == id)
                    #expect(request.headers.first(named: "Streamup-Offset") == "\(offset)")
                    let saved = try SourceState.load(from: stateFile)
                    #expect(saved?.streamID == id && saved?.streamOffset == offset + 5 && saved?.sources.first?.offset == 4)
                }
            }
        }

        /// Bad URLs and methods are refused before anything is sent.
        @Test func invalidConfigurationIsRefusedUpFront() throws {
            #expect(throws: StreamUpError.self) { try UploadConfiguration.url(from: "not a url") }
            #expect(throws: StreamUpError.self) { try UploadConfiguration.url(from: "ftp://host/x") }
            var configuration = UploadConfiguration(url: URL(string: "http://127.0.0.1/")!)
            configuration.method = "GET"
            #expect(throws: StreamUpError.self) { try StreamUploader(configuration, options: .singleRequest) }
        }
    }
}
