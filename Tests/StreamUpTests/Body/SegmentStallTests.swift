import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

@testable import StreamUp

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension InProcessUploads {
    @Suite(.timeLimit(.minutes(3))) struct SegmentStallTests {
        /// An app embeds an uploader: while a segment waits for its next record (for a minute
        /// here), the app's own URLSession request to another local server is answered at once,
        /// before the segment's request has even started. The segment is cut in the delivery task
        /// and goes out as a complete body when it ends. (A segment whose body read waited inside
        /// URLSession held its one process-wide queue: every request in the process waited for
        /// the segment's next record or its end, DesignNotes, platform fact 10.)
        @Test func anOpenSegmentDoesNotHoldUpTheAppsOwnRequests() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { appServer in
                    let events = EventRecorder<UploadEvent>()
                    var options = StreamUploader.Options()
                    options.segmentDuration = .seconds(60)
                    let uploader = try StreamUploader(UploadConfiguration(url: sink.url), options: options, onEvent: events.handler)
                    let (records, input) = AsyncStream.makeStream(of: [UInt8].self)
                    let run = Task { try await uploader.run(AsyncSequenceProducer(records)) }
                    input.yield(Array("the first record\n".utf8))
                    // The segment holds the record and waits for more (in the delivery task; before,
                    // in the request's body read, with the request open at the sink).
                    let segmentOpen = await eventually {
                        uploader.buffer.withState { state in state.readableWaitOffsets.contains { $0 > state.acknowledged } }
                            || sink.openConnectionCount > 0
                    }
                    #expect(segmentOpen)

                    let status = try await get(appServer.url.appendingPathComponent("health"))
                    #expect(status > 0)
                    let segmentStarted = events.all.contains { if case .requestStarted = $0.detail { true } else { false } }
                    #expect(!segmentStarted, "the app's request was answered only after the segment's request started")
                    #expect(sink.requests.isEmpty)

                    input.finish()
                    let response = try await run.value
                    #expect(response.isSuccess)
                    let request = try #require(sink.requests.last)
                    #expect(request.body == Array("the first record\n".utf8))
                    #expect(request.headers.first(named: "Content-Length") == "17")
                }
            }
        }

        /// A GET with `URLSession.shared`, as an app makes one; returns the status.
        private func get(_ url: URL) async throws -> Int {
            try await withCheckedThrowingContinuation { continuation in
                URLSession.shared.dataTask(with: url) { _, response, error in
                    if let error { return continuation.resume(throwing: error) }
                    continuation.resume(returning: (response as? HTTPURLResponse)?.statusCode ?? 0)
                }.resume()
            }
        }
    }
}
