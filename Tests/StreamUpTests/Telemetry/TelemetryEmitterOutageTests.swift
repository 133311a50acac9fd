import Foundation
import StreamUp
import StreamUpSink
import StreamUpTestSupport
import Testing

/// The embedded emitter on bad days: an app's logging call never waits for a receiver that is
/// down, the emitter rides out an outage of any length unless the app set a limit (and says so
/// when it stops), and it never sends a body that waits inside URLSession.
extension InProcessUploads {
    @Suite(.timeLimit(.minutes(2))) struct TelemetryEmitterOutageTests {
        /// The records of the complete requests the sink received, in order.
        private static func received(_ sink: SinkServer) throws -> [Reading] {
            let body = sink.requests.filter(\.isComplete).sorted { $0.sequence < $1.sequence }.flatMap { $0.body ?? [] }
            return try body.split(separator: UInt8(ascii: "\n")).map { try JSONDecoder().decode(Reading.self, from: Data($0)) }
        }

        private static func notices(_ recorder: EventRecorder<UploadEvent>) -> [String] {
            recorder.all.compactMap { event in
                guard case .notice(let text) = event.detail else { return nil }
                return text
            }
        }

        private static func failures(_ recorder: EventRecorder<UploadEvent>) -> Int {
            recorder.all.filter { $0.kind == .retrying }.count
        }

        /// Retries a few milliseconds apart, with the uploader's default limit (10 retries): what
        /// an app gets when it tunes the backoff and leaves the limit alone.
        private static var quickRetries: StreamUploader.Options {
            var options = StreamUploader.Options()
            options.segmentDuration = .milliseconds(50)
            options.retry.baseDelay = .milliseconds(1)
            options.retry.maxDelay = .milliseconds(5)
            return options
        }

        /// With the default `whenFull`, a full buffer never holds an app's `emit`: while the
        /// receiver is down every call returns (the records that do not fit are dropped,
        /// counted, and reported with their cause); once the receiver is up, what was held
        /// arrives.
        @Test func emitNeverWaitsForAReceiverThatIsDown() async throws {
            let port = unusedLocalPort()
            let recorder = EventRecorder<UploadEvent>()
            let emitter = try TelemetryEmitter(
                url: URL(string: "http://127.0.0.1:\(port)/ingest")!, bufferSize: 4096, delivery: .segments(Self.quickRetries),
                onEvent: recorder.handler)
            let note = String(repeating: "d", count: 200)
            let emitting = Task {
                for index in 0..<200 { try await emitter.emit(Reading(task: 0, index: index, note: note)) }
            }
            // Every call returns while the receiver is still down (nothing listens on the port).
            #expect(await eventually { emitter.metrics.accepted + emitter.metrics.dropped == 200 })
            try await emitting.value
            let held = emitter.metrics.accepted
            #expect(held > 0 && held < 200 && emitter.metrics.dropped == 200 - held)
            #expect(emitter.metrics.bytesBuffered <= 4096)
            let report = try #require(Self.notices(recorder).first { $0.contains("dropped") })
            #expect(report.contains("the telemetry buffer (4096 bytes) was full"), "\(report)")

            // The receiver comes up on the port: what was held arrives, in order.
            try await SinkServer.withRunning(SinkConfiguration(port: port, keepBodiesInMemory: true)) { sink in
                let answer = try await emitter.finish(within: .seconds(60))
                #expect(answer?.isSuccess == true)
                #expect(try Self.received(sink).map(\.index) == Array(0..<held))
            }
        }

        /// `.wait(atMost:)` waits for space at most its bound on the emitter's clock, then drops
        /// the record and says why.
        @Test func emitWaitsAtMostItsBound() async throws {
            let clock = ManualClock()
            let recorder = EventRecorder<UploadEvent>()
            var configuration = UploadConfiguration(url: URL(string: "http://127.0.0.1:\(unusedLocalPort())/ingest")!)
            configuration.bufferSize = 4096
            var options = StreamUploader.Options()
            options.retry.baseDelay = .seconds(3600)
            options.retry.maxDelay = .seconds(3600)
            let emitter = try TelemetryEmitter(
                configuration, delivery: .segments(options), whenFull: .wait(atMost: .seconds(2)), clock: clock, onEvent: recorder.handler)
            let record = Reading(task: 0, index: 0, note: String(repeating: "w", count: 200))
            while emitter.tryEmit(record) {}
            let dropsBefore = emitter.metrics.dropped
            let waiting = Task { try await emitter.emit(record) }
            try await waitUntil { clock.sleeperCount == 1 }  // the emit waits for space, on the clock
            clock.advance(by: .seconds(1))
            #expect(clock.sleeperCount == 1 && emitter.metrics.dropped == dropsBefore, "the emit gave up before its bound")
            clock.advance(by: .seconds(1))
            try await waiting.value
            #expect(emitter.metrics.dropped == dropsBefore + 1)
            let causes = Self.notices(recorder).joined(separator: "\n")
            #expect(causes.contains("was full") && !causes.contains("for longer than"), "only tryEmit's drop is reported so far: \(causes)")
            emitter.cancel()
            _ = try? await emitter.finish()
            #expect(Self.notices(recorder).last?.contains("was full for longer than 2.0 seconds") == true, "\(Self.notices(recorder))")
            // The app's cancel is not the emitter giving up.
            #expect(!recorder.all.contains { $0.kind == .gaveUp })
        }

        /// A drop after `finish` says the emitter had finished, not that the buffer was full.
        @Test func aDropAfterFinishSaysWhy() async throws {
            let recorder = EventRecorder<UploadEvent>()
            let emitter = try TelemetryEmitter(url: URL(string: "http://127.0.0.1:\(unusedLocalPort())/ingest")!, onEvent: recorder.handler)
            #expect(try await emitter.finish() == nil)
            #expect(emitter.tryEmit(Reading(task: 0, index: 0, note: "late")) == false)
            let report = try #require(Self.notices(recorder).last)
            #expect(report.contains("the emitter had finished") && !report.contains("was full"), "\(report)")
        }

        /// With the default retry limit, the emitter rides out an outage far longer than ten
        /// retries: the receiver comes up on the port after 30 failed attempts, and every
        /// record arrives; `emit` never threw meanwhile.
        @Test func theEmitterRidesOutAnOutageOfAnyLength() async throws {
            let port = unusedLocalPort()
            let recorder = EventRecorder<UploadEvent>()
            let emitter = try TelemetryEmitter(
                url: URL(string: "http://127.0.0.1:\(port)/ingest")!, delivery: .segments(Self.quickRetries), onEvent: recorder.handler)
            try await emitter.emit(Reading(task: 0, index: 0, note: "before the outage"))
            #expect(await eventually { Self.failures(recorder) >= 30 })
            try await emitter.emit(Reading(task: 0, index: 1, note: "during the outage"))
            #expect(!recorder.all.contains { $0.kind == .gaveUp })
            try await SinkServer.withRunning(SinkConfiguration(port: port, keepBodiesInMemory: true)) { sink in
                #expect(await eventually { (try? Self.received(sink).count) == 2 })
                try await emitter.emit(Reading(task: 0, index: 2, note: "after the outage"))
                #expect(try await emitter.finish(within: .seconds(60))?.isSuccess == true)
                #expect(try Self.received(sink).map(\.index) == [0, 1, 2])
            }
        }

        /// An app that sets a limit gets it: when the retries run out, the emitter says so once
        /// (`gaveUp`, with what was not delivered); then `emit` throws and `tryEmit` drops, and
        /// the drop report names the cause.
        @Test func anEmitterThatStopsSaysItGaveUp() async throws {
            let recorder = EventRecorder<UploadEvent>()
            var options = Self.quickRetries
            options.retry.maxRetries = 3
            let emitter = try TelemetryEmitter(
                url: URL(string: "http://127.0.0.1:\(unusedLocalPort())/ingest")!, delivery: .segments(options), onEvent: recorder.handler)
            try await emitter.emit(Reading(task: 0, index: 0, note: "lost"))
            let gaveUp = try #require(await poll { recorder.all.first { $0.kind == .gaveUp } })
            #expect(gaveUp.isNotice && gaveUp.description.contains("bytes of records were not delivered"), "\(gaveUp)")
            await #expect(throws: StreamUpError.self) { try await emitter.emit(Reading(task: 0, index: 1, note: "after")) }
            #expect(emitter.tryEmit(Reading(task: 0, index: 2, note: "after")) == false)
            #expect(Self.notices(recorder).last?.contains("the emitter had given up") == true, "\(Self.notices(recorder))")
            #expect(recorder.all.filter { $0.kind == .gaveUp }.count == 1)
        }

        /// An emitter never sends one live request (its body would wait inside URLSession and
        /// stall the app's other requests): the option is refused when the emitter is made.
        @Test func oneLiveRequestIsRefused() throws {
            let refused: (any Error) -> Bool = { ($0 as? StreamUpError)?.code == .invalidConfiguration }
            #expect(performing: { try TelemetryEmitter(url: URL(string: "http://127.0.0.1:9/ingest")!, delivery: .segments(.singleRequest)) }, throws: refused)
        }
    }
}
