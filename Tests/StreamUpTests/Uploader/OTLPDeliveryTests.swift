import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// The OTLP preset's delivery in the test process (the scripted transport, the manual clock):
/// protobuf requests, answers as the OTLP specification gives them.
@Suite(.timeLimit(.minutes(1))) struct OTLPDeliveryTests {
    private let clock = ManualClock()

    /// Six OTLP records, a request per two; the receiver answers the first request 500 (final
    /// in OTLP: kept as a dead letter, not retried) and the second 200 with a protobuf
    /// `partial_success` (3 rejected: the request kept, never sent again); the third is stored.
    /// Every request is one protobuf `ExportLogsServiceRequest`, each sent once.
    @Test func finalAnswersAndPartialSuccessAreKeptAndNeverSentAgain() async throws {
        try await withTemporaryDirectory { directory in
            let partial = String(decoding: OTLPFixture.partialSuccessHex.hexBytes, as: UTF8.self)
            let transport = ScriptedTransport(replies: [
                .answer(500, headers: ["Content-Type": "application/x-protobuf"], body: "\u{12}\u{4}down"),
                .answer(200, headers: ["Content-Type": "application/x-protobuf"], body: partial),
            ])
            let receiver = Receiver.otlp
            var base = StreamUploader.Options()
            base.deadLetterDirectory = URL(fileURLWithPath: directory)
            var options = receiver.deliveryOptions(base)
            options.maxInFlight = 1
            options.segmentDuration = .seconds(3600)
            var formatter = try receiver.formatter(host: "h")
            let records = (0..<6).map { formatter.record(Array("line \($0)".utf8), readAt: Date()) }
            options.segmentBytes = records[0].count * 2
            let configuration = try receiver.configuration(url: URL(string: "http://collector.test")!, keys: nil, host: "h")
            let events = EventRecorder<UploadEvent>()
            let uploader = try StreamUploader(configuration, options: options, clock: clock, transport: transport, onEvent: events.handler)
            let running = Task { try await uploader.run(ChunksProducer(chunks: records)) }
            #expect(await eventually { transport.requests.count == 3 && uploader.progress.acknowledged == records.joined().count })
            uploader.cancel()
            _ = try? await running.value
            let requests = transport.requests
            #expect(requests.count == 3 && Set(requests.map(\.body)).count == 3, "a request was sent again")
            #expect(requests.allSatisfy { $0.header("Content-Type") == "application/x-protobuf" && $0.url.path == "/v1/logs" })
            #expect(requests.allSatisfy { $0.body.first == 0x0A }, "each body is an ExportLogsServiceRequest (field 1 first)")
            // The 500's segment is a dead letter; the partial success's 3 records are refused, and
            // their request is kept beside it.
            #expect(uploader.progress.deadLetters == 1 && uploader.progress.rejectedRecords == 3, "\(uploader.progress)")
            let kept = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".body") }
            #expect(kept.count == 2, "\(kept)")
        }
    }
}

extension OTLPDeliveryTests {
    /// A protobuf request gives its length before its records: one live request cannot carry
    /// it, and the uploader refuses to be made so (OTLP/HTTP JSON can).
    @Test func oneLiveRequestCannotCarryProtobuf() throws {
        let url = URL(string: "http://collector.test")!
        #expect(throws: StreamUpError.self) { try StreamUploader(try Receiver.otlp.configuration(url: url), options: .singleRequest) }
        _ = try StreamUploader(try Receiver.otlpJSON.configuration(url: url), options: .singleRequest)
    }
}

extension String {
    /// The bytes of a string of hex digits.
    fileprivate var hexBytes: [UInt8] {
        stride(from: 0, to: count, by: 2).map { UInt8(dropFirst($0).prefix(2), radix: 16)! }
    }
}
