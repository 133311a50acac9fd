import Foundation
import StreamUp
import StreamUpSink
import StreamUpTestSupport
import Testing

/// One telemetry record as the tests emit it.
struct Reading: Codable, Hashable {
    let task: Int
    let index: Int
    let note: String
}

extension TelemetryEmitter.Options {
    /// The default options with those given changed.
    static func with(bufferSize: Int? = nil, whenFull: TelemetryEmitter.WhenFull? = nil, delivery: StreamUploader.Options? = nil) -> Self {
        var options = Self()
        if let bufferSize { options.bufferSize = bufferSize }
        if let whenFull { options.whenFull = whenFull }
        if let delivery { options.delivery = delivery }
        return options
    }
}

extension InProcessUploads {
    @Suite(.timeLimit(.minutes(2))) struct TelemetryEmitterTests {
        /// With delivery options, records go out in acknowledged segments: through a sink that
        /// resets a connection every 20 kB, every record arrives exactly once, and `flush()`
        /// returns only when the sink has acknowledged everything emitted before it.
        @Test func reliableEmitterLosesNothingWhenConnectionsDrop() async throws {
            let directory = try TemporaryDirectory()
            var configuration = SinkConfiguration(outputDirectory: directory.path)
            configuration.faults = SinkFaults(dropAfterBytes: 20_000, dropRepeatedly: true)
            try await SinkServer.withRunning(configuration) { sink in
                var options = StreamUploader.Options()
                options.segmentBytes = 8_192
                options.segmentDuration = .milliseconds(200)
                options.retry.baseDelay = .milliseconds(10)
                let emitter = try TelemetryEmitter(url: sink.url, options: .with(delivery: options))
                for index in 0..<1_000 {
                    try await emitter.emit(Reading(task: 1, index: index, note: "n"))
                }
                try await emitter.flush()
                #expect(emitter.metrics.bytesBuffered == 0)
                let response = try await emitter.finish()
                #expect(response?.isSuccess == true)
                let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
                let stream = try #require(names.first { $0.hasPrefix("stream-") })
                let body = try Data(contentsOf: directory.url.appendingPathComponent(stream))
                let readings = try body.split(separator: UInt8(ascii: "\n")).map { try JSONDecoder().decode(Reading.self, from: Data($0)) }
                #expect(readings.map(\.index) == Array(0..<1_000))
                #expect(sink.requests.contains { !$0.isComplete }, "no connection was dropped")
            }
        }

        /// Many tasks emitting at once: every record arrives, each on a line of its own, whole,
        /// in the emitter's default delivery (acknowledged segments).
        @Test func concurrentEmitsAllArriveAsWholeLines() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                // A small buffer forces emitters to wait in line, where interleaving would show.
                let emitter = try TelemetryEmitter(
                    url: sink.url.appendingPathComponent("telemetry"), options: .with(bufferSize: 1024, whenFull: .wait(atMost: .seconds(60))))
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for task in 0..<20 {
                        group.addTask {
                            for index in 0..<50 {
                                let note = String(repeating: "x", count: (task * 7 + index * 13) % 300)
                                try await emitter.emit(Reading(task: task, index: index, note: note))
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                try await emitter.flush()
                #expect(emitter.metrics.bytesBuffered == 0)
                let response = try await emitter.finish()
                #expect(response?.isSuccess == true)
                let body = sink.requests.sorted { $0.sequence < $1.sequence }.flatMap { $0.body ?? [] }
                let lines = body.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).dropLast()
                let readings = try lines.map { try JSONDecoder().decode(Reading.self, from: Data($0)) }
                #expect(readings.count == 1000)
                #expect(Set(readings.map { [$0.task, $0.index] }).count == 1000)
                #expect(emitter.metrics.accepted == 1000 && emitter.metrics.dropped == 0)
                #expect(sink.requests.last?.headers.first(named: "Content-Type") == "application/x-ndjson")
            }
        }

        /// A producer made from an `AsyncSequence` streams its elements in order.
        @Test func asyncSequenceProducerStreamsElementsInOrder() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                let (stream, continuation) = AsyncStream<[UInt8]>.makeStream()
                for index in 0..<100 { continuation.yield(Array("event \(index)\n".utf8)) }
                continuation.finish()
                let uploader = try StreamUploader(UploadConfiguration(url: sink.url), options: .singleRequest)
                let response = try await uploader.run(AsyncSequenceProducer(stream))
                #expect(response.isSuccess)
                #expect(sink.requests.last?.body == Array((0..<100).map { "event \($0)\n" }.joined().utf8))
            }
        }
    }
}
