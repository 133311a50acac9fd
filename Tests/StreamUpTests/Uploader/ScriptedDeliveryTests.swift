import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// Delivery as a user meets it, in the test process: the uploader's real delivery loop, machine
/// and exchanges, with a scripted transport for the receiver and a manual clock for backoffs
/// and deadlines (no socket, no process, no real waiting). What only a process shows (exit
/// codes, lines on stderr, signals) stays in the CLI's tests.
@Suite(.timeLimit(.minutes(1))) struct ScriptedDeliveryTests {
    private let clock = ManualClock()
    private let url = URL(string: "http://receiver.test/ingest")!

    /// `lines` (each with its `\n`) as the producer's input, then its end.
    private static func input(_ lines: [String]) -> ChunksProducer {
        ChunksProducer(chunks: lines.map { Array("\($0)\n".utf8) })
    }

    /// Options of small segments (`bytes` each), a time limit that never ends one, and the
    /// backoff the server's Retry-After alone decides (up to an hour).
    private static func options(segmentBytes bytes: Int = 1 << 20) -> StreamUploader.Options {
        var options = StreamUploader.Options()
        options.segmentBytes = bytes
        options.segmentDuration = .seconds(3600)
        options.retry.maxDelay = .seconds(3600)
        return options
    }

    private func uploader(
        _ transport: ScriptedTransport, _ options: StreamUploader.Options = options(), events: EventRecorder<UploadEvent>? = nil
    ) throws -> StreamUploader {
        let recorder = events ?? EventRecorder<UploadEvent>()
        return try StreamUploader(UploadConfiguration(url: url), options: options, clock: clock, transport: transport, onEvent: recorder.handler)
    }

    /// The stream a receiver that keeps each `Streamup-Offset` once would hold: each
    /// request's body at its offset, a resend of an offset it holds dropped.
    private static func stored(_ requests: [ScriptedTransport.Request]) -> String {
        var held: [Int: String] = [:]
        for request in requests {
            guard let offset = request.header("Streamup-Offset").flatMap(Int.init) else { continue }
            held[offset] = held[offset] ?? request.text
        }
        return held.sorted { $0.key < $1.key }.map(\.value).joined()
    }

    /// An upload under way, whose answer a test waits for with a deadline: an upload that does
    /// not end (a retry that waits for ever on the manual clock) is cancelled then, and the
    /// test fails instead of hanging.
    private struct Running {
        let uploader: StreamUploader
        let task: Task<UploadResponse, Error>
        let ended: Locked<Bool>

        init(_ uploader: StreamUploader, _ producer: ChunksProducer) {
            let ended = Locked(false)
            self.uploader = uploader
            self.ended = ended
            task = Task {
                defer { ended.withLock { $0 = true } }
                return try await uploader.run(producer)
            }
        }

        /// The upload's answer, once it ends (within 20 s).
        func answer() async throws -> UploadResponse {
            if await !eventually({ ended.withLock { $0 } }) { uploader.cancel() }
            return try await task.value
        }
    }

    /// Runs `lines` through `uploader` and returns its answer (within 20 s).
    private static func upload(_ lines: [String], with uploader: StreamUploader) async throws -> UploadResponse {
        try await Running(uploader, input(lines)).answer()
    }

    // MARK: Final refusals and retries

    /// 400, 401 and 403 are final: one request, no retry, and that answer is the upload's.
    @Test(arguments: [400, 401, 403]) func clientErrorsAreNotRetried(status: Int) async throws {
        let transport = ScriptedTransport { _, _ in .answer(status, body: "refused") }
        let uploader = try uploader(transport)
        let answer = try await Self.upload(["one", "two"], with: uploader)
        #expect(answer.statusCode == status)
        #expect(transport.requests.count == 1)
        #expect(uploader.progress.retries == 0 && uploader.progress.acknowledged == 0)
    }

    /// 503 with `Retry-After: 1`, then 200: the retry waits the second the server asked for on
    /// the clock, not less, and sends the same records.
    @Test func retryAfterIsHonoured() async throws {
        let transport = ScriptedTransport(replies: [.answer(503, headers: ["Retry-After": "1"])])
        let uploader = try uploader(transport)
        let running = Running(uploader, Self.input(["again"]))
        defer { uploader.cancel() }
        try await waitUntil { transport.requests.count == 1 && clock.sleeperCount == 1 }
        clock.advance(by: .milliseconds(999))
        #expect(clock.sleeperCount == 1 && transport.requests.count == 1, "the retry did not wait the server's Retry-After")
        clock.advance(by: .milliseconds(1))
        #expect(try await running.answer().isSuccess)
        #expect(transport.bodies == ["again\n", "again\n"])
        #expect(uploader.progress.retries == 1)
    }

    /// `Retry-After: 999999` does not outlast the user's limit: with a retry time of 3 s the
    /// upload stops on the 503 once 3 s of failures passed on the clock, not in 11 days.
    @Test func retryAfterNeverOutlastsTheRetryTimeLimit() async throws {
        let transport = ScriptedTransport { _, _ in .answer(503, headers: ["Retry-After": "999999"]) }
        var options = Self.options()
        options.retry.maxDelay = .seconds(86400 * 30)
        options.retry.maxRetryTime = .seconds(3)
        let uploader = try uploader(transport, options)
        let running = Running(uploader, Self.input(["held"]))
        defer { uploader.cancel() }
        try await waitUntil { transport.requests.count == 1 && clock.sleeperCount == 1 }
        clock.advance(by: .milliseconds(2999))
        #expect(clock.sleeperCount == 1 && transport.requests.count == 1, "the retry went before the server's Retry-After")
        clock.advance(by: .milliseconds(1))
        let answer = try await running.answer()
        #expect(answer.statusCode == 503)
        #expect(transport.requests.count == 2, "one retry when the limit's 3 s were up, then the stop")
    }

    // MARK: Lost answers and resends

    /// The receiver stores the second segment but its answer is lost: that segment goes again,
    /// identical and at the same offset, the segments after it follow, and a receiver that keeps
    /// each offset once holds every line once.
    @Test func aLostAnswerOfAMiddleSegmentIsResentIdentical() async throws {
        let lines = (0..<12).map { "line \($0)" }
        let transport = ScriptedTransport(replies: [.ok, .noAnswer])
        var options = Self.options(segmentBytes: 24)
        // No backoff: the resend follows at once.
        options.retry.baseDelay = .zero
        let uploader = try uploader(transport, options)
        let answer = try await Self.upload(lines, with: uploader)
        #expect(answer.isSuccess)
        let requests = transport.requests
        try #require(requests.count >= 4)
        #expect(requests[2].body == requests[1].body && requests[2].header("Streamup-Offset") == requests[1].header("Streamup-Offset"))
        #expect(Self.stored(requests) == lines.map { "\($0)\n" }.joined())
        #expect(uploader.progress.resent == requests[1].body.count)
    }

    // MARK: Smaller segments

    /// A receiver that answers 413 to bodies over 64 bytes, and one record of 200 bytes among
    /// short ones: segments shrink to fit, for good; the big record goes whole to the dead
    /// letters (no smaller request holds it); the records after it go in segments that fit, not
    /// one request each, and each short record is stored once.
    @Test func aRecordTooLargeForAnyRequestGoesWholeToTheDeadLetters() async throws {
        try await withTemporaryDirectory { directory in
            let big = String(repeating: "b", count: 199)
            let short = (0..<60).map { String(format: "short %03d", $0) }
            let lines = Array(short[..<30]) + [big] + Array(short[30...])
            let transport = ScriptedTransport { request, _ in request.body.count > 64 ? .answer(413, body: "too large") : .ok }
            var options = Self.options(segmentBytes: 256)
            options.deadLetterDirectory = URL(fileURLWithPath: directory)
            let events = EventRecorder<UploadEvent>()
            let uploader = try uploader(transport, options, events: events)
            #expect(try await Self.upload(lines, with: uploader).isSuccess)
            let stored = transport.requests.filter { $0.body.count <= 64 }.map(\.text).joined()
            #expect(stored == short.map { "\($0)\n" }.joined(), "every short record once, in order")
            // After the size settled, requests hold several records each (60 records of 10 bytes).
            #expect(transport.requests.count < 40, "\(transport.requests.count) requests")
            let shrunk = events.all.compactMap { event -> String? in
                if case .notice(let text) = event.detail, text.contains("from now on") { text } else { nil }
            }
            #expect(!shrunk.isEmpty && shrunk.allSatisfy { !$0.contains("up to 1 byte") }, "\(shrunk)")
            let bodies = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".body") }
            try #require(bodies.count == 1, "\(bodies)")
            #expect(try String(contentsOfFile: directory + "/" + bodies[0], encoding: .utf8) == big + "\n", "the record whole")
            #expect(uploader.progress.deadLetters == 1)
        }
    }

    // MARK: The turnaround between two segments

    /// A producer faster than the receiver fills the buffer and waits for room. The room an
    /// answer frees lets it go on only once the next segment's request has started, so its
    /// refill runs beside that request, not between the answer and the next request; every line
    /// arrives once, in order.
    @Test func aProducerWaitingForRoomGoesOnOnceTheNextRequestStarted() async throws {
        let lines = (0..<24).map { String(format: "line %02d", $0) }
        let started = Locked<StreamUploader?>(nil)
        let heldAtStart = Locked<[Int: Int]>([:])
        // The first request waits for the test; each request notes whether a producer was
        // held back when it started.
        let transport = ScriptedTransport { _, index in
            if let buffer = started.withLock({ $0 })?.buffer { heldAtStart.withLock { $0[index] = buffer.wakesHeld } }
            return index == 0 ? .hold : .ok
        }
        var options = Self.options(segmentBytes: 36)
        options.storage = .memory(capacity: 72)
        options.maxRecordBytes = 16
        let uploader = try uploader(transport, options)
        started.withLock { $0 = uploader }
        let running = Running(uploader, Self.input(lines))
        defer { uploader.cancel() }
        // The buffer is full and the producer waits for room.
        try await waitUntil { transport.requests.count == 1 && uploader.buffer.pauses.count > 0 }
        transport.release(0, with: .ok)
        #expect(try await running.answer().isSuccess)
        #expect(heldAtStart.withLock { $0[1] } == 1, "the producer was still held back when the second request started")
        #expect(uploader.buffer.wakesHeld == 0, "no producer stays held back")
        #expect(Self.stored(transport.requests) == lines.map { "\($0)\n" }.joined())
    }

    // MARK: A window of requests

    /// Four segments out at once; the answer to the second is lost (the receiver stored it):
    /// that segment alone goes out again, identical, no segment after it that was answered is
    /// sent again, and a receiver that keeps each offset once holds every line once.
    @Test func aLostAnswerInTheMiddleOfTheWindowResendsThatSegmentAlone() async throws {
        let lines = (0..<40).map { String(format: "line %03d", $0) }
        // The first four requests wait for the test; the rest are answered at once.
        let transport = ScriptedTransport { _, index in index < 4 ? .hold : .ok }
        var options = Self.options(segmentBytes: 45)
        options.maxInFlight = 4
        options.adaptiveInFlight = false
        options.retry.baseDelay = .zero
        let uploader = try uploader(transport, options)
        let running = Running(uploader, Self.input(lines))
        defer { uploader.cancel() }
        try await waitUntil { transport.requests.count == 4 }
        #expect(uploader.requestWindow.inFlight == 4, "four requests out at once")
        transport.release(3, with: .ok)
        transport.release(1, with: .noAnswer)
        transport.release(2, with: .ok)
        transport.release(0, with: .ok)
        #expect(try await running.answer().isSuccess)
        let requests = transport.requests
        let offsets = requests.compactMap { $0.header("Streamup-Offset") }
        let lost = try #require(requests[1].header("Streamup-Offset"))
        #expect(offsets.filter { $0 == lost }.count == 2, "the segment whose answer was lost went twice: \(offsets)")
        #expect(Set(offsets).count == offsets.count - 1, "no other segment went twice: \(offsets)")
        #expect(requests.filter { $0.header("Streamup-Offset") == lost }.map(\.body).allSatisfy { $0 == requests[1].body }, "identical")
        #expect(Self.stored(requests) == lines.map { "\($0)\n" }.joined())
    }

    /// With dead letters, a segment refused for good is set aside and the stream goes on with
    /// gapless offsets (`Streamup-Offset` leaves out what was set aside): an uploader asked for
    /// a window of eight keeps one request out when it keeps dead letters (segments already out
    /// would carry offsets that count the bytes set aside). What was stored and what was set
    /// aside is the input, each line once.
    @Test func aSegmentSetAsideLeavesNoGapInTheOffsets() async throws {
        try await withTemporaryDirectory { directory in
            let lines = (0..<30).map { String(format: "line %03d", $0) }
            // Each request waits for the test, which answers the second with a refusal for good.
            let transport = ScriptedTransport { _, _ in .hold }
            var options = Self.options(segmentBytes: 27)
            options.maxInFlight = 8
            options.deadLetterDirectory = URL(fileURLWithPath: directory)
            let uploader = try uploader(transport, options)
            let running = Running(uploader, Self.input(lines))
            defer { uploader.cancel() }
            var answered = 0
            // Answers each request once it is out, checking that it is the only one out.
            while await eventually({ transport.requests.count > answered || running.ended.withLock { $0 } }), transport.requests.count > answered {
                #expect(transport.requests.count == answered + 1 && uploader.requestWindow.inFlight == 1, "one request out at a time")
                transport.release(answered, with: answered == 1 ? .answer(400, body: "bad record") : .ok)
                answered += 1
            }
            #expect(try await running.answer().isSuccess)
            #expect(uploader.progress.deadLetters == 1)
            let requests = transport.requests
            var end = 0
            for (index, request) in requests.enumerated() where index != 1 {
                #expect(request.header("Streamup-Offset") == String(end), "request \(index) after the end \(end)")
                end += request.body.count
            }
            let bodies = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".body") }
            try #require(bodies.count == 1, "\(bodies)")
            let setAside = try String(contentsOfFile: directory + "/" + bodies[0], encoding: .utf8)
            #expect(setAside == requests[1].text, "the refused segment is kept whole")
            let stored = requests.enumerated().filter { $0.offset != 1 }.map(\.element.text).joined()
            #expect((stored + setAside).split(separator: "\n").sorted() == lines.map { Substring($0) }, "each line once")
        }
    }

    // MARK: Endpoints and partial refusals

    /// Failover over a dead endpoint and a live one: the first segment goes to the dead one,
    /// which is set aside (one notice says so), and the segment goes to the live one at once,
    /// without a backoff; every line arrives there once.
    @Test func failoverSendsASegmentElsewhereAtOnce() async throws {
        let dead = URL(string: "http://dead.test/ingest")!
        let transport = ScriptedTransport { request, _ in request.url.host == "dead.test" ? .noAnswer : .ok }
        var options = Self.options(segmentBytes: 30)
        options.endpoints = [dead, url]
        let events = EventRecorder<UploadEvent>()
        let uploader = try uploader(transport, options, events: events)
        let lines = (0..<10).map { "line \($0)" }
        // No clock moves: a backoff before the live endpoint would never end.
        #expect(try await Self.upload(lines, with: uploader).isSuccess)
        let requests = transport.requests
        #expect(requests.first?.url.host == "dead.test" && requests.dropFirst().allSatisfy { $0.url.host == "receiver.test" })
        #expect(Self.stored(Array(requests.dropFirst())) == lines.map { "\($0)\n" }.joined())
        let notices = events.all.compactMap { event -> String? in if case .notice(let text) = event.detail { text } else { nil } }
        #expect(notices.contains { $0.contains("http://dead.test/ingest is set aside") }, "\(notices)")
    }

    /// Elasticsearch stores a request's records but refuses one item: that record is reported
    /// refused and never sent again, and the stream is acknowledged past it.
    @Test func aRecordRefusedInAPartialAnswerIsReportedAndNotSentAgain() async throws {
        let item = #"{"create":{"_index":"logs","status":201}}"#
        let refused = #"{"create":{"_index":"logs","status":400,"error":{"type":"document_parsing_exception","reason":"failed to parse field [n]"}}}"#
        let answer = #"{"took":3,"errors":true,"items":[\#(item),\#(refused),\#(item)]}"#
        let transport = ScriptedTransport(replies: [.answer(200, body: answer)])
        var options = Self.options()
        options.answerReader = .elasticsearchBulk
        let events = EventRecorder<UploadEvent>()
        let uploader = try uploader(transport, options, events: events)
        let lines = [#"{"n":1}"#, #"{"n":"x"}"#, #"{"n":3}"#]
        #expect(try await Self.upload(lines, with: uploader).isSuccess)
        #expect(transport.requests.count == 1, "nothing is sent again")
        #expect(uploader.progress.rejectedRecords == 1 && uploader.progress.acknowledged == 26)
        let rejected = events.all.compactMap { event -> Int? in if case .recordsRejected(let count, _, _) = event.detail { count } else { nil } }
        #expect(rejected == [1])
    }
}
