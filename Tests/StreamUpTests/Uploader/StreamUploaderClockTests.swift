import Foundation
import StreamUp
import StreamUpSink
import StreamUpTestSupport
import Testing

extension InProcessUploads {
    /// The uploader's timing on a manual clock, against the real sink: a segment's time limit,
    /// a retry's backoff and the state checkpoints wait for the clock, never for real time.
    @Suite(.timeLimit(.minutes(2))) struct StreamUploaderClockTests {
        /// Options whose only way to end a segment early is its time limit: an hour.
        private static var hourlySegments: StreamUploader.Options {
            var options = StreamUploader.Options()
            options.segmentDuration = .seconds(3600)
            return options
        }

        /// A segment is cut when its time limit passes on the clock, not before.
        @Test func aSegmentIsCutWhenItsTimePasses() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                let clock = ManualClock()
                let uploader = try StreamUploader(
                    UploadConfiguration(url: sink.url.appendingPathComponent("upload")), options: Self.hourlySegments, clock: clock)
                let running = Task { try await uploader.run(ChunksProducer(chunks: [Array("first\n".utf8)], thenIdle: true)) }
                defer { uploader.cancel() }
                // The cut has the record and waits for its deadline on the clock.
                try await waitUntil { uploader.progress.produced == 6 && clock.sleeperCount == 1 }
                clock.advance(by: .seconds(3599))
                #expect(clock.sleeperCount == 1 && sink.requests.isEmpty, "the segment was cut before its time")
                clock.advance(by: .seconds(1))
                try await waitUntil { sink.requests.count == 1 }
                #expect(sink.requests.first?.body == Array("first\n".utf8))
                try #require(await eventually { uploader.progress.acknowledged == 6 })
                uploader.finish()
                #expect(try await running.value.isSuccess)
            }
        }

        /// A refused segment is tried again once its backoff (the server's `Retry-After`) has
        /// passed on the clock, not before.
        @Test func aRetryWaitsItsBackoff() async throws {
            var sinkConfiguration = SinkConfiguration(keepBodiesInMemory: true)
            sinkConfiguration.faults = SinkFaults(failNextRequests: 1, retryAfterSeconds: 600)
            try await SinkServer.withRunning(sinkConfiguration) { sink in
                let clock = ManualClock()
                var options = StreamUploader.Options()
                options.retry.maxDelay = .seconds(3600)
                let uploader = try StreamUploader(
                    UploadConfiguration(url: sink.url.appendingPathComponent("upload")), options: options, clock: clock)
                // The input ends after its record: the segment goes out at once.
                let running = Task { try await uploader.run(ChunksProducer(chunks: [Array("again\n".utf8)])) }
                defer { uploader.cancel() }
                try await waitUntil { sink.requests.count == 1 && clock.sleeperCount == 1 }
                #expect(sink.requests.first?.status == 503)
                clock.advance(by: .seconds(599))
                #expect(clock.sleeperCount == 1 && sink.requests.count == 1, "the retry did not wait its backoff")
                clock.advance(by: .seconds(1))
                #expect(try await running.value.isSuccess)
                #expect(sink.requests.map(\.status) == [503, 200])
                #expect(sink.requests.last?.body == Array("again\n".utf8))
                #expect(uploader.progress.retries == 1)
            }
        }

        /// With a spool and a state file, where the stream stands is saved when a checkpoint's
        /// interval passes on the clock, not before.
        @Test func aCheckpointSavesTheStateWhenItsIntervalPasses() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                try await withTemporaryDirectory { directory in
                    let clock = ManualClock()
                    let stateFile = directory + "/state.json"
                    var options = Self.hourlySegments
                    options.storage = .spool(directory: URL(fileURLWithPath: directory + "/spool"))
                    options.stateFile = URL(fileURLWithPath: stateFile)
                    let uploader = try StreamUploader(
                        UploadConfiguration(url: sink.url.appendingPathComponent("upload")), options: options, clock: clock)
                    let running = Task { try await uploader.run(ChunksProducer(chunks: [Array("kept\n".utf8)], thenIdle: true)) }
                    defer { uploader.cancel() }
                    func savedOffset() throws -> Int? { try SourceState.load(from: stateFile)?.streamOffset }
                    // The checkpoints and the cut's deadline wait on the clock.
                    try await waitUntil { uploader.progress.produced == 5 && clock.sleeperCount == 2 }
                    #expect(try savedOffset() == nil, "the state was saved before a checkpoint's interval passed")
                    clock.advance(by: .milliseconds(100))
                    try await waitUntil { try savedOffset() == 5 }
                    #expect(sink.requests.isEmpty)
                    uploader.cancel()
                    _ = try? await running.value
                }
            }
        }
    }
}
