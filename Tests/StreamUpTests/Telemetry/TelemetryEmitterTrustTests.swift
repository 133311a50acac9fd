import Foundation
import StreamUp
import StreamUpSink
import StreamUpTestSupport
import Testing

/// A record with a date, as an app emits one.
private struct Stamped: Codable {
    let at: Date
}

/// What an app embedding a ``TelemetryEmitter`` relies on: records arrive
/// while the emitter stays open, `tryEmit` alone delivers, emitters never share a stream,
/// shutdown keeps its deadline, drops are counted and reported, dates carry milliseconds,
/// events hold no secrets, a heartbeat rides on the emitter's own stream.
extension InProcessUploads {
    @Suite(.timeLimit(.minutes(2))) struct TelemetryEmitterTrustTests {
        /// The records of the requests the sink has received whole, in order.
        private static func received(_ sink: SinkServer) throws -> [Reading] {
            let body = sink.requests.filter(\.isComplete).sorted { $0.sequence < $1.sequence }.flatMap { $0.body ?? [] }
            return try body.split(separator: UInt8(ascii: "\n")).map { try JSONDecoder().decode(Reading.self, from: Data($0)) }
        }

        /// A URL nothing listens on: the receiver is down.
        private static var receiverDown: URL { URL(string: "http://127.0.0.1:\(unusedLocalPort())/ingest")! }

        /// Options that keep retrying a receiver that is down, an hour apart: only a deadline or
        /// a wake ends the wait.
        private static var patientOptions: StreamUploader.Options {
            var options = StreamUploader.Options()
            options.retry = RetryPolicy(maxRetries: nil)
            options.retry.baseDelay = .seconds(3600)
            options.retry.maxDelay = .seconds(3600)
            options.retry.maxReconnectDelay = .seconds(3600)
            return options
        }

        private static func dropNotices(_ recorder: EventRecorder<UploadEvent>) -> [String] {
            recorder.all.compactMap { event in
                guard case .notice(let text) = event.detail, text.contains("was full") else { return nil }
                return text
            }
        }

        /// By default the records go out in acknowledged segments: a receiver that reads whole
        /// requests has them within a segment's time, while the emitter stays open.
        @Test func recordsArriveWithoutFinishByDefault() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                let emitter = try TelemetryEmitter(url: sink.url)
                for index in 0..<3 {
                    try await emitter.emit(Reading(task: 0, index: index, note: "live"))
                }
                #expect(await eventually { (try? Self.received(sink).map(\.index)) == [0, 1, 2] })
                #expect(try await emitter.finish()?.isSuccess == true)
            }
        }

        /// An emitter used only through `tryEmit` delivers: nothing else has to be called first.
        @Test func tryEmitAloneDelivers() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                let emitter = try TelemetryEmitter(url: sink.url)
                for index in 0..<10 {
                    #expect(emitter.tryEmit(Reading(task: 0, index: index, note: "best effort")))
                }
                #expect(emitter.metrics.accepted == 10 && emitter.metrics.dropped == 0)
                #expect(await eventually { (try? Self.received(sink).count) == 10 })
                _ = try await emitter.finish()
            }
        }

        /// Two emitters made from one `StreamUploader.Options` are two streams at the receiver:
        /// each draws its own `Streamup-Stream-Id`, and the sink keeps both whole and in order.
        @Test func twoEmittersFromOneOptionsAreTwoStreams() async throws {
            let directory = try TemporaryDirectory()
            try await SinkServer.withRunning(SinkConfiguration(outputDirectory: directory.path)) { sink in
                var options = StreamUploader.Options()
                options.segmentDuration = .milliseconds(50)
                let first = try TelemetryEmitter(url: sink.url, options: .with(delivery: options))
                let second = try TelemetryEmitter(url: sink.url, options: .with(delivery: options))
                for index in 0..<50 {
                    try await first.emit(Reading(task: 1, index: index, note: "heartbeat"))
                    try await second.emit(Reading(task: 2, index: index, note: "event"))
                }
                #expect(try await first.finish()?.isSuccess == true)
                #expect(try await second.finish()?.isSuccess == true)
                let streams = try directory.fileNames().filter { $0.hasPrefix("stream-") }
                #expect(streams.count == 2)
                var tasks: Set<Int> = []
                for stream in streams {
                    let body = try Data(contentsOf: directory.url.appendingPathComponent(stream))
                    let readings = try body.split(separator: UInt8(ascii: "\n")).map { try JSONDecoder().decode(Reading.self, from: Data($0)) }
                    #expect(readings.map(\.index) == Array(0..<50))
                    #expect(Set(readings.map(\.task)).count == 1)
                    tasks.formUnion(readings.map(\.task))
                }
                #expect(tasks == [1, 2])
            }
        }

        /// Uploaders made from one `Options` draw their own stream ids; an id the caller sets is kept.
        @Test func eachUploaderDrawsItsOwnStreamID() throws {
            let configuration = UploadConfiguration(url: URL(string: "http://127.0.0.1:9/ingest")!)
            var options = StreamUploader.Options()
            let ids = try (0..<3).map { _ in try StreamUploader(configuration, options: options).streamID }
            #expect(Set(ids).count == 3)
            options.streamID = "named"
            #expect(try StreamUploader(configuration, options: options).streamID == "named")
        }

        /// With the receiver down and retries an hour apart, `finish(within:)` throws `.timedOut`
        /// when its deadline passes on the emitter's clock, and the upload is cancelled.
        @Test func finishWithinThrowsAtItsDeadline() async throws {
            let clock = ManualClock()
            let emitter = try TelemetryEmitter(UploadConfiguration(url: Self.receiverDown), options: .with(delivery: Self.patientOptions), clock: clock)
            try await emitter.emit(Reading(task: 0, index: 0, note: "never delivered"))
            let finishing = Task { try await emitter.finish(within: .seconds(5)) }
            // The deadline is set at 5 s on the clock (the uploader sleeps on it too).
            let deadline = ManualClock.Instant(offset: .seconds(5))
            try await waitUntil { clock.deadlines.contains(deadline) }
            clock.advance(by: .seconds(4))
            #expect(clock.deadlines.contains(deadline), "finish gave up before its deadline")
            clock.advance(by: .seconds(1))
            let outcome = await finishing.result
            #expect((outcome.error as? StreamUpError)?.code == .timedOut, "finish ended with \(outcome)")
            // The upload was cancelled: a later emit fails instead of waiting.
            await #expect(throws: StreamUpError.self) { try await emitter.emit(Reading(task: 0, index: 1, note: "late")) }
        }

        /// `flush(within:)` throws `.timedOut` at its deadline when nothing is acknowledged; the
        /// emitter is still usable afterwards.
        @Test func flushWithinThrowsAtItsDeadline() async throws {
            let clock = ManualClock()
            let emitter = try TelemetryEmitter(UploadConfiguration(url: Self.receiverDown), options: .with(delivery: Self.patientOptions), clock: clock)
            try await emitter.emit(Reading(task: 0, index: 0, note: "pending"))
            let flushing = Task { try await emitter.flush(within: .seconds(2)) }
            try await waitUntil { clock.deadlines.contains(ManualClock.Instant(offset: .seconds(2))) }
            clock.advance(by: .seconds(2))
            let outcome = await flushing.result
            #expect((outcome.error as? StreamUpError)?.code == .timedOut, "flush ended with \(outcome)")
            #expect(emitter.tryEmit(Reading(task: 0, index: 1, note: "still open")))
            emitter.cancel()
        }

        /// A finish during a retry's backoff tries again at once: the sink refuses the first
        /// segment with `Retry-After: 3600` (capped at the 30 s backoff cap), and finish still
        /// delivers well before that wait ends.
        @Test func finishWakesARetryWaitingOutItsBackoff() async throws {
            var configuration = SinkConfiguration(keepBodiesInMemory: true)
            configuration.faults = SinkFaults(failNextRequests: 1, retryAfterSeconds: 3600)
            try await SinkServer.withRunning(configuration) { sink in
                let recorder = EventRecorder<UploadEvent>()
                let emitter = try TelemetryEmitter(url: sink.url, onEvent: recorder.handler)
                try await emitter.emit(Reading(task: 0, index: 0, note: "after the outage"))
                let retrying = await poll { recorder.all.first { if case .retrying = $0.detail { true } else { false } } }
                guard case .retrying(_, _, let delay, _) = try #require(retrying).detail else { return }
                #expect(delay == .seconds(30))
                let answer = try await emitter.finish(within: .seconds(10))
                #expect(answer?.isSuccess == true)
                #expect(try Self.received(sink).map(\.note) == ["after the outage"])
            }
        }

        /// `finish()` after emitting nothing sends no request and returns nil, also with the
        /// receiver down.
        @Test func finishAfterNothingSendsNothing() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                #expect(try await TelemetryEmitter(url: sink.url).finish() == nil)
                let flushed = try TelemetryEmitter(url: sink.url)
                try await flushed.flush(within: .seconds(20))
                #expect(try await flushed.finish() == nil)
                #expect(sink.requests.isEmpty, "an empty request was sent: \(sink.requests)")
            }
            let down = try TelemetryEmitter(UploadConfiguration(url: Self.receiverDown), options: .with(delivery: Self.patientOptions))
            #expect(try await down.finish(within: .seconds(60)) == nil)
        }

        /// With `.dropNewest`, a full buffer drops the record being emitted (`tryEmit` and `emit`
        /// alike, neither waits): each drop is counted, and reported through `onEvent` at most
        /// once per interval on the emitter's clock, with the count since the last report.
        @Test func dropsAreCountedAndReportedOncePerInterval() async throws {
            let clock = ManualClock()
            let recorder = EventRecorder<UploadEvent>()
            let emitter = try TelemetryEmitter(
                UploadConfiguration(url: Self.receiverDown), options: .with(bufferSize: 4096, whenFull: .dropNewest, delivery: Self.patientOptions),
                clock: clock, dropReportInterval: .seconds(10), onEvent: recorder.handler)
            let record = Reading(task: 0, index: 0, note: String(repeating: "z", count: 100))
            let accepted = (0..<100).filter { _ in emitter.tryEmit(record) }.count
            #expect(accepted > 0 && accepted < 100)
            try await emitter.emit(record)  // returns at once: dropped, not waiting
            #expect(emitter.metrics.accepted == accepted)
            #expect(emitter.metrics.dropped == 101 - accepted)
            #expect(emitter.metrics.bytesBuffered <= 4096)
            #expect(Self.dropNotices(recorder).count == 1, "\(Self.dropNotices(recorder))")

            clock.advance(by: .seconds(10))
            #expect(emitter.tryEmit(record) == false)
            let notices = Self.dropNotices(recorder)
            #expect(notices.count == 2)
            #expect(notices.last?.contains("\(101 - accepted) records dropped since the last report, \(102 - accepted) in all") == true, "\(notices)")
            emitter.cancel()
        }

        /// A record longer than the buffer (then the most a record may be) is refused
        /// whole by `emit` and dropped by `tryEmit`, never split into broken JSON; the records
        /// around it arrive.
        @Test func aRecordLongerThanTheBufferIsRefusedWhole() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                let emitter = try TelemetryEmitter(url: sink.url, options: .with(bufferSize: 1024))
                let long = Reading(task: 0, index: 1, note: String(repeating: "l", count: 2000))
                try await emitter.emit(Reading(task: 0, index: 0, note: "before"))
                await #expect(throws: StreamUpError.self) { try await emitter.emit(long) }
                #expect(emitter.tryEmit(long) == false)
                try await emitter.emit(Reading(task: 0, index: 2, note: "after"))
                #expect(try await emitter.finish()?.isSuccess == true)
                #expect(try Self.received(sink).map(\.note) == ["before", "after"])
            }
        }

        /// Dates are RFC 3339 in UTC with milliseconds.
        @Test func datesCarryMilliseconds() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                let emitter = try TelemetryEmitter(url: sink.url)
                try await emitter.emit(Stamped(at: Date(timeIntervalSince1970: 1_764_000_000.125)))
                _ = try await emitter.finish()
                let body = sink.requests.flatMap { $0.body ?? [] }
                #expect(String(decoding: body, as: UTF8.self) == "{\"at\":\"2025-11-24T16:00:00.125Z\"}\n")
            }
        }

        /// Events handed to `onEvent` carry no credentials: `Authorization` keeps its scheme,
        /// `DD-API-KEY` is hidden, other fields are as sent; the server still gets the real values.
        @Test func eventsCarryNoSecrets() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                let recorder = EventRecorder<UploadEvent>()
                let headers: [UploadConfiguration.Header] = [
                    .init(name: "Authorization", value: "Bearer s3cr3t-token"),
                    .init(name: "DD-API-KEY", value: "k3y-value"),
                    .init(name: "X-Service", value: "checkout"),
                ]
                let emitter = try TelemetryEmitter(url: sink.url, headers: headers, onEvent: recorder.handler)
                try await emitter.emit(Reading(task: 0, index: 0, note: "n"))
                _ = try await emitter.finish()
                let sent = recorder.all.compactMap { event -> [UploadConfiguration.Header]? in
                    guard case .requestStarted(_, _, let headers) = event.detail else { return nil }
                    return headers
                }
                #expect(!sent.isEmpty)
                for fields in sent {
                    #expect(fields.first { $0.name == "Authorization" }?.value == "Bearer <redacted>")
                    #expect(fields.first { $0.name == "DD-API-KEY" }?.value == "<redacted>")
                    #expect(fields.first { $0.name == "X-Service" }?.value == "checkout")
                }
                let everything = "\(recorder.all)"
                #expect(!everything.contains("s3cr3t") && !everything.contains("k3y-value"))
                #expect(sink.requests.first?.headers.first(named: "Authorization") == "Bearer s3cr3t-token")
            }
        }

        /// Credentials that rotate: `headerProvider` is asked for the header fields of every
        /// request, retries included, so a token the app renews goes out on the next request.
        /// Here the receiver refuses the first request 401 (the token expired), which the app
        /// retries (`retryableStatuses`; by default a 401 stops the emitter for good); the retry
        /// carries the renewed token. No token appears in an event.
        @Test func aRenewedTokenGoesOutOnTheNextRequest() async throws {
            var sinkConfiguration = SinkConfiguration(keepBodiesInMemory: true)
            sinkConfiguration.faults = SinkFaults(failNextRequests: 1, failStatus: 401)
            try await SinkServer.withRunning(sinkConfiguration) { sink in
                let clock = ManualClock()
                let token = Locked("expired-t0ken")
                var configuration = UploadConfiguration(url: sink.url)
                configuration.headerProvider = { [UploadConfiguration.Header(name: "Authorization", value: "Bearer \(token.withLock { $0 })")] }
                var delivery = StreamUploader.Options()
                delivery.segmentBytes = 1  // each record goes out at once, not at a segment time on the clock
                delivery.retry.retryableStatuses.insert(401)
                let recorder = EventRecorder<UploadEvent>()
                let emitter = try TelemetryEmitter(configuration, options: .with(delivery: delivery), clock: clock, onEvent: recorder.handler)
                try await emitter.emit(Reading(task: 0, index: 0, note: "after a renewal"))
                // The first request is refused and its retry waits on the clock; the app renews
                // the token meanwhile.
                try await waitUntil { recorder.all.contains { $0.kind == .retrying } && clock.sleeperCount == 1 }
                token.withLock { $0 = "renewed-t0ken" }
                clock.advance(by: .seconds(1))
                #expect(try await emitter.finish()?.isSuccess == true)
                let sent = sink.requests.sorted { $0.sequence < $1.sequence }.map { $0.headers.first(named: "Authorization") }
                #expect(sent == ["Bearer expired-t0ken", "Bearer renewed-t0ken"])
                #expect(try Self.received(sink).map(\.note) == ["after a renewal"])
                #expect(!"\(recorder.all)".contains("t0ken"))
            }
        }

        /// A gzip level zlib refuses is an error when the emitter (or an uploader) is made, not an
        /// uncompressed body labelled `Content-Encoding: gzip`.
        @Test func badGzipLevelIsRefusedAtConstruction() throws {
            var configuration = UploadConfiguration(url: URL(string: "http://127.0.0.1:9/ingest")!)
            configuration.body.gzip = true
            configuration.body.gzipLevel = 42
            let refused: (any Error) -> Bool = {
                ($0 as? StreamUpError)?.code == .invalidConfiguration && "\($0)".contains("gzip level 42")
            }
            #expect(performing: { try TelemetryEmitter(configuration) }, throws: refused)
            #expect(performing: { try StreamUploader(configuration) }, throws: refused)
            #expect(performing: { try StreamUploader(configuration, options: .singleRequest) }, throws: refused)
            configuration.body.gzipLevel = 9
            _ = try TelemetryEmitter(configuration)
        }

        /// `startHeartbeat` adds heartbeat records to the emitter's own stream (one stream id at
        /// the receiver), at once and then every interval on the emitter's clock, between the
        /// app's records.
        @Test func heartbeatRidesOnTheEmittersStream() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                let clock = ManualClock()
                var options = StreamUploader.Options()
                // Each record goes out alone at once: no segment waits for its time on the clock.
                options.segmentBytes = 1
                let emitter = try TelemetryEmitter(UploadConfiguration(url: sink.url), options: .with(delivery: options), clock: clock)
                func lines() -> [[String: Any]] {
                    let body = sink.requests.filter(\.isComplete).sorted { $0.sequence < $1.sequence }.flatMap { $0.body ?? [] }
                    return body.split(separator: UInt8(ascii: "\n")).compactMap {
                        try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any]
                    }
                }
                emitter.startHeartbeat(every: .seconds(10), fields: [("job", "nightly")])
                #expect(await eventually { lines().count == 1 })
                try await emitter.emit(["event": "work"])
                #expect(await eventually { lines().count == 2 })
                // The heartbeat waits for its next tick, the only sleeper on the clock.
                try await waitUntil { clock.deadlines == [ManualClock.Instant(offset: .seconds(10))] }
                clock.advance(by: .seconds(10))
                #expect(await eventually { lines().count == 3 })
                #expect(try await emitter.finish()?.isSuccess == true)

                let records = lines()
                #expect(records.map { $0["seq"] as? Int } == [1, nil, 2])
                #expect(records[0]["job"] as? String == "nightly" && records[1]["event"] as? String == "work")
                let ids = Set(sink.requests.compactMap { $0.headers.first(named: "Streamup-Stream-Id") })
                #expect(ids.count == 1, "the heartbeat went out on a stream of its own: \(ids)")
            }
        }
    }
}

extension Result {
    /// The error, if this is a failure.
    fileprivate var error: Failure? {
        guard case .failure(let error) = self else { return nil }
        return error
    }
}
