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
                url: URL(string: "http://127.0.0.1:\(port)/ingest")!, options: .with(bufferSize: 4096, delivery: Self.quickRetries),
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
            let configuration = UploadConfiguration(url: URL(string: "http://127.0.0.1:\(unusedLocalPort())/ingest")!)
            var delivery = StreamUploader.Options()
            delivery.retry.baseDelay = .seconds(3600)
            delivery.retry.maxDelay = .seconds(3600)
            delivery.retry.maxReconnectDelay = .seconds(3600)
            let emitter = try TelemetryEmitter(
                configuration, options: .with(bufferSize: 4096, whenFull: .wait(atMost: .seconds(2)), delivery: delivery), clock: clock,
                onEvent: recorder.handler)
            let record = Reading(task: 0, index: 0, note: String(repeating: "w", count: 200))
            while emitter.tryEmit(record) {}
            let dropsBefore = emitter.metrics.dropped
            let waiting = Task { try await emitter.emit(record) }
            // The emit waits for space until 2 s on the clock (the uploader sleeps on it too).
            let bound = ManualClock.Instant(offset: .seconds(2))
            try await waitUntil { clock.deadlines.contains(bound) }
            clock.advance(by: .seconds(1))
            #expect(clock.deadlines.contains(bound) && emitter.metrics.dropped == dropsBefore, "the emit gave up before its bound")
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
                url: URL(string: "http://127.0.0.1:\(port)/ingest")!, options: .with(delivery: Self.quickRetries), onEvent: recorder.handler)
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

        /// The records of the complete requests the sink received, counted by their line ends
        /// (cheap enough to poll while tens of thousands arrive).
        private static func receivedCount(_ sink: SinkServer) -> Int {
            sink.requests.filter(\.isComplete).reduce(0) { count, request in count + (request.body?.count(where: { $0 == UInt8(ascii: "\n") }) ?? 0) }
        }

        /// The outage an app meets, on the emitter's clock: the receiver is down for 30 s while
        /// the app logs 1,000 records a second of about 120 bytes from code that cannot await
        /// (`tryEmit`, as a swift-log handler calls it), then it comes back while the app goes
        /// on logging. With the default options nothing is dropped, delivery resumes within a
        /// second of the receiver's return, and every record arrives once, in order.
        @Test func aThirtySecondOutageAtAThousandRecordsASecondLosesNothing() async throws {
            let clock = ManualClock()
            let port = unusedLocalPort()
            let recorder = EventRecorder<UploadEvent>()
            let firstAnswer = Locked<ManualClock.Instant?>(nil)  // on the clock
            let emitter = try TelemetryEmitter(
                UploadConfiguration(url: URL(string: "http://127.0.0.1:\(port)/ingest")!), clock: clock,
                onEvent: { event in
                    if let status = event.statusCode, (200..<300).contains(status) { firstAnswer.withLock { $0 = $0 ?? clock.now } }
                    recorder.record(event)
                })
            let note = String(repeating: "o", count: 85)
            var (emitted, refused) = (0, 0)
            /// 1,000 records a second for `seconds`: 100 every 100 ms on the clock.
            func log(for seconds: Int) {
                for _ in 0..<seconds * 10 {
                    for _ in 0..<100 {
                        if !emitter.tryEmit(Reading(task: 0, index: emitted, note: note)) { refused += 1 }
                        emitted += 1
                    }
                    clock.advance(by: .milliseconds(100))
                }
            }
            func count(_ kind: UploadEvent.Kind) -> Int { recorder.all.filter { $0.kind == kind }.count }

            // Given a receiver that is down (nothing listens on its port) for 30 s of logging:
            log(for: 30)
            #expect(refused == 0 && emitter.metrics.dropped == 0, "\(refused) of \(emitted) records dropped during the outage")
            #expect(
                (118...122).contains(emitter.metrics.bytesProduced / max(1, emitter.metrics.accepted)),
                "records of about \(emitter.metrics.bytesProduced / max(1, emitter.metrics.accepted)) bytes")
            // nothing is dropped, every attempt has failed, and the uploader waits out a backoff
            // (the one sleeper on the clock) that ends within a second.
            try await waitUntil { count(.requestStarted) > 0 && count(.requestStarted) == count(.retrying) && clock.deadlines.count == 1 }
            let returned = clock.now
            let retryAt = clock.deadlines[0]
            #expect(returned.duration(to: retryAt) <= .seconds(1), "the next attempt is due \(returned.duration(to: retryAt)) from now")
            try await SinkServer.withRunning(SinkConfiguration(port: port, keepBodiesInMemory: true)) { sink in
                // When the receiver is back and the app logs one more second,
                log(for: 1)
                // then, with no more time passing, a segment the outage held is acknowledged:
                // delivery resumed within a second of the receiver's return.
                let resumed = try #require(await poll { firstAnswer.withLock { $0 } }, "no answer within a second of the return")
                #expect(returned.duration(to: resumed) <= .seconds(1), "delivery resumed \(returned.duration(to: resumed)) after the return")
                // And every record arrives once, in order, none dropped.
                #expect(try await emitter.finish()?.isSuccess == true)
                #expect(try Self.received(sink).map(\.index) == Array(0..<emitted))
                #expect(refused == 0 && emitter.metrics.dropped == 0)
            }
        }

        /// An app that keeps its records in a spool (`delivery.storage`) keeps what an outage held
        /// across its own restart: the records emitted while the receiver is down wait on disk,
        /// the app ends (`cancel`), and the next emitter on the same spool sends them, before
        /// anything new, as soon as the receiver is back, without waiting for a record.
        @Test func aSpoolKeepsWhatAnOutageHeldForTheNextRun() async throws {
            let directory = try TemporaryDirectory()
            let port = unusedLocalPort()
            let url = URL(string: "http://127.0.0.1:\(port)/ingest")!
            var options = StreamUploader.Options()
            options.storage = .spool(directory: directory.url.appendingPathComponent("spool"))
            options.retry.baseDelay = .milliseconds(10)
            let first = try TelemetryEmitter(url: url, options: .with(delivery: options))
            for index in 0..<100 { try await first.emit(Reading(task: 0, index: index, note: "held")) }
            first.cancel()
            _ = try? await first.finish()
            try await SinkServer.withRunning(SinkConfiguration(port: port, keepBodiesInMemory: true)) { sink in
                let second = try TelemetryEmitter(url: url, options: .with(delivery: options))
                #expect(await eventually { Self.receivedCount(sink) == 100 })
                try await second.emit(Reading(task: 0, index: 100, note: "new"))
                #expect(try await second.finish()?.isSuccess == true)
                #expect(try Self.received(sink).map(\.index) == Array(0...100))
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
                url: URL(string: "http://127.0.0.1:\(unusedLocalPort())/ingest")!, options: .with(delivery: options), onEvent: recorder.handler)
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
            #expect(
                performing: { try TelemetryEmitter(url: URL(string: "http://127.0.0.1:9/ingest")!, options: .with(delivery: .singleRequest)) }, throws: refused)
        }
    }
}
