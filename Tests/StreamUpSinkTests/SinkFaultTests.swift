import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUpSink

/// Injected faults (``SinkFaults``) against a live server: what the client sees, and the events.
@Suite struct SinkFaultTests {
    private static func body(_ count: Int) -> String {
        String(repeating: "x", count: count)
    }

    /// The first request is reset after exactly N body bytes, reported incomplete and kept as
    /// `.partial`; the next request is served normally.
    @Test func dropAfterBytesResetsTheFirstRequestOnly() throws {
        let directory = try TemporaryDirectory()
        let recorder = EventRecorder<SinkRequestEvent>()
        let configuration = SinkConfiguration(outputDirectory: directory.path, faults: SinkFaults(dropAfterBytes: 100))
        try withSink(configuration, recorder: recorder) { server in
            let client = try TestClient(port: server.port)
            try client.send(uploadHead("Content-Length: 1000") + Self.body(1_000))
            let end = try client.readUntilEnd()
            #expect(end.ending == .reset)
            #expect(end.bytesBefore == 0)
            let event = try #require(try recorder.wait(for: 1).first)
            #expect(!event.isComplete && event.status == 0)
            #expect(event.bodyByteCount == 100)
            #expect(event.failure == "injected fault: connection dropped after 100 body bytes")
            let partial = try #require(event.storedFile)
            #expect(partial.hasSuffix(".partial"))
            #expect(try Data(contentsOf: URL(fileURLWithPath: partial)).count == 100)

            let next = try TestClient(port: server.port)
            try next.send(uploadHead("Content-Length: 1000") + Self.body(1_000))
            #expect(try next.readResponse().status == 200)
        }
    }

    /// `loseAnswers`: the request is stored whole, then the connection is reset with no answer;
    /// the next request is answered as usual.
    @Test func loseAnswersStoresTheRequestThenResets() throws {
        let directory = try TemporaryDirectory()
        let recorder = EventRecorder<SinkRequestEvent>()
        let configuration = SinkConfiguration(outputDirectory: directory.path, faults: SinkFaults(loseAnswers: 1))
        try withSink(configuration, recorder: recorder) { server in
            let client = try TestClient(port: server.port)
            try client.send(uploadHead("Content-Length: 1000") + Self.body(1_000))
            let end = try client.readUntilEnd()
            #expect(end.ending == .reset && end.bytesBefore == 0)
            let event = try #require(try recorder.wait(for: 1).first)
            #expect(event.isComplete && event.status == 0 && event.bodyByteCount == 1_000)
            let stored = try #require(event.storedFile)
            #expect(try Data(contentsOf: URL(fileURLWithPath: stored)).count == 1_000)

            let next = try TestClient(port: server.port)
            try next.send(uploadHead("Content-Length: 10") + Self.body(10))
            #expect(try next.readResponse().status == 200)
        }
    }

    /// `loseAnswersOfStreamRequests`: the second request of each stream is stored (here held
    /// aside, past the end) and its connection reset without an answer; the others of that
    /// stream, before and after it, and of another stream are answered.
    @Test func loseAnswersOfStreamRequestsLosesTheNthOfEachStream() throws {
        let directory = try TemporaryDirectory()
        let configuration = SinkConfiguration(outputDirectory: directory.path, faults: SinkFaults(loseAnswersOfStreamRequests: [2]))
        try withSink(configuration) { server in
            func send(_ id: String, _ offset: Int, _ body: String) throws -> TestClient {
                let client = try TestClient(port: server.port)
                try client.send(
                    uploadHead("Content-Length: \(body.utf8.count)", "Streamup-Stream-Id: \(id)", "Streamup-Offset: \(offset)") + body)
                return client
            }
            #expect(try send("a", 0, "abc").readResponse().status == 200)
            let lost = try send("a", 6, "ghi").readUntilEnd()
            #expect(lost.ending == .reset && lost.bytesBefore == 0)
            #expect(try send("b", 0, "xyz").readResponse().status == 200)
            #expect(try send("a", 3, "def").readResponse().json()["stream_offset"] as? Int == 9)
            #expect(try send("b", 3, "XYZ").readUntilEnd().ending == .reset)
        }
        #expect(try String(contentsOfFile: directory.file("stream-a.body"), encoding: .utf8) == "abcdefghi")
        #expect(try String(contentsOfFile: directory.file("stream-b.body"), encoding: .utf8) == "xyzXYZ")
    }

    /// With `dropRepeatedly` every request is reset at the same byte count.
    @Test func dropRepeatedlyResetsEachRequest() throws {
        let recorder = EventRecorder<SinkRequestEvent>()
        let configuration = SinkConfiguration(faults: SinkFaults(dropAfterBytes: 10, dropRepeatedly: true))
        try withSink(configuration, recorder: recorder) { server in
            for _ in 0..<2 {
                let client = try TestClient(port: server.port)
                try client.send(uploadHead("Transfer-Encoding: chunked") + "20\r\n" + Self.body(32) + "\r\n0\r\n\r\n")
                #expect(try client.readUntilEnd().ending == .reset)
            }
            let events = try recorder.wait(for: 2)
            #expect(events.map(\.bodyByteCount) == [10, 10])
            #expect(events.allSatisfy { !$0.isComplete })
        }
    }

    /// The next K requests are answered the failure status with `Retry-After: 1` (for 503) after
    /// their bodies were read; the request after them gets 200, on the same connection.
    @Test func failNextAnswersTheStatusThenRecovers() throws {
        let directory = try TemporaryDirectory()
        let recorder = EventRecorder<SinkRequestEvent>()
        let configuration = SinkConfiguration(
            outputDirectory: directory.path, faults: SinkFaults(failNextRequests: 2, failStatus: 503))
        try withSink(configuration, recorder: recorder) { server in
            let client = try TestClient(port: server.port)
            for _ in 0..<2 {
                try client.send(uploadHead("Content-Length: 5") + "hello")
                let response = try client.readResponse()
                #expect(response.status == 503)
                #expect(response.headers["retry-after"] == "1")
                #expect(response.headers["connection"] == "keep-alive")
                #expect(try response.json()["status"] as? Int == 503)
            }
            try client.send(uploadHead("Content-Length: 5") + "hello")
            let last = try client.readResponse()
            #expect(last.status == 200)
            #expect(last.headers["retry-after"] == nil)
            let events = try recorder.wait(for: 3)
            #expect(events.map(\.status) == [503, 503, 200])
            #expect(events.map(\.isComplete) == [false, false, true])
            #expect(try directory.fileNames() == ["00000003-POST.body"])
        }
    }

    /// `retryAfterSeconds` replaces the default; statuses other than 503/429 get no `Retry-After`.
    @Test func retryAfterFollowsTheStatusAndTheOption() throws {
        let cases: [(SinkFaults, String?)] = [
            (SinkFaults(failNextRequests: 1, failStatus: 429), "1"),
            (SinkFaults(failNextRequests: 1, failStatus: 503, retryAfterSeconds: 7), "7"),
            (SinkFaults(failNextRequests: 1, failStatus: 500), nil),
        ]
        for (faults, expected) in cases {
            try withSink(SinkConfiguration(faults: faults)) { server in
                let client = try TestClient(port: server.port)
                try client.send(uploadHead("Content-Length: 2") + "hi")
                let response = try client.readResponse()
                #expect(response.status == faults.failStatus)
                #expect(response.headers["retry-after"] == expected)
            }
        }
    }

    /// A 100 KB body read at 200 KB/s takes at least 0.4 s, and arrives intact.
    @Test func readRateThrottlesTheConnection() throws {
        let configuration = SinkConfiguration(faults: SinkFaults(readBytesPerSecond: 200_000))
        try withSink(configuration) { server in
            let body = Self.body(100_000)
            let client = try TestClient(port: server.port)
            let start = ContinuousClock.now
            try client.send(uploadHead("Content-Length: 100000") + body)
            let response = try client.readResponse()
            let elapsed = ContinuousClock.now - start
            #expect(response.status == 200)
            #expect(try response.json()["bytes"] as? Int == 100_000)
            #expect(elapsed >= .milliseconds(400))
        }
    }

    /// `answerDelay`: the body is stored (its event reported) before the 200, which comes after
    /// the delay, on each connection.
    @Test func answerDelayHoldsEach200AfterStoring() throws {
        let recorder = EventRecorder<SinkRequestEvent>()
        let configuration = SinkConfiguration(faults: SinkFaults(answerDelay: .milliseconds(300)))
        try withSink(configuration, recorder: recorder) { server in
            let first = try TestClient(port: server.port)
            let second = try TestClient(port: server.port)
            let start = ContinuousClock.now
            try first.send(uploadHead("Content-Length: 10") + Self.body(10))
            try second.send(uploadHead("Content-Length: 10") + Self.body(10))
            #expect(try recorder.wait(for: 2).allSatisfy { $0.status == 200 && $0.isComplete })
            #expect(try first.readResponse().status == 200)
            #expect(try second.readResponse().status == 200)
            #expect(ContinuousClock.now - start >= .milliseconds(300))
        }
        #expect(throws: SinkError.self) {
            _ = try SinkServer(configuration: SinkConfiguration(faults: SinkFaults(answerDelay: .milliseconds(-1))))
        }
    }

    /// The first request stops being read after N body bytes until the idle timeout; the client
    /// gets no response, and the event says so.
    @Test func stallAfterBytesStopsReadingUntilTheIdleTimeout() throws {
        let recorder = EventRecorder<SinkRequestEvent>()
        let configuration = SinkConfiguration(
            idleTimeout: .milliseconds(300), faults: SinkFaults(stallAfterBytes: 1_000))
        try withSink(configuration, recorder: recorder) { server in
            let client = try TestClient(port: server.port)
            try client.send(uploadHead("Content-Length: 5000") + Self.body(5_000))
            let end = try client.readUntilEnd()
            #expect(end.ending != .timedOut)
            #expect(end.bytesBefore == 0)
            let event = try #require(try recorder.wait(for: 1).first)
            #expect(!event.isComplete)
            #expect(event.bodyByteCount == 1_000)
            #expect(event.failure == "injected fault: stalled after 1000 body bytes (idle timeout)")
            #expect(event.duration >= .milliseconds(300))

            let next = try TestClient(port: server.port)
            try next.send(uploadHead("Content-Length: 5000") + Self.body(5_000))
            #expect(try next.readResponse().status == 200)
        }
    }

    /// Out-of-range faults are refused before anything is bound.
    @Test func outOfRangeFaultsAreRefused() {
        let invalid = [
            SinkFaults(dropAfterBytes: -1),
            SinkFaults(failNextRequests: -1),
            SinkFaults(failStatus: 200),
            SinkFaults(readBytesPerSecond: 0),
            SinkFaults(stallAfterBytes: -5),
        ]
        for faults in invalid {
            #expect(throws: SinkError.self) { _ = try SinkServer(configuration: SinkConfiguration(faults: faults)) }
        }
        #expect(SinkConfiguration().faults == .none)
    }
}
