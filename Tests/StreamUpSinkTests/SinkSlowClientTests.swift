import Foundation
import StreamUpSystem
import StreamUpTestSupport
import Testing

@testable import StreamUpSink

/// Slow clients against the live server: heads trickled a byte at a time (slowloris), bodies
/// dripped below the minimum rate, idle kept-alive connections hogging slots, and the live
/// stream that must *not* be mistaken for any of them. Time is driven by small configured
/// deadlines; every wait is for an answer the client observes.
@Suite(.timeLimit(.minutes(1))) struct SinkSlowClientTests {
    /// The outcome of an upload run on a thread of its own.
    ///
    /// Thread safety: guarded by the `value` mutex.
    private final class UploadResult: Sendable {
        let value = Mutex<Result<TestResponse, TestClientError>?>(nil)

        var isSet: Bool { value.withLock { $0 != nil } }
    }

    /// Uploads `body` with `Content-Length` on a new thread; the result lands in the returned box.
    private static func uploadInBackground(port: UInt16, body: [UInt8]) -> UploadResult {
        let result = UploadResult()
        Thread.detachNewThread {
            let outcome: Result<TestResponse, TestClientError>
            do {
                let client = try TestClient(port: port)
                try client.send(Array(uploadHead(path: "/real", "Content-Length: \(body.count)").utf8) + body)
                outcome = .success(try client.readResponse())
            } catch {
                outcome = .failure(TestClientError(description: "\(error)"))
            }
            result.value.withLock { $0 = outcome }
        }
        return result
    }

    /// Given every slot held by clients that trickle their heads a byte at a time (each byte
    /// resets the idle timeout), a real upload still gets in and is stored whole: it takes the
    /// place of the client that has trickled longest, which is answered 503 and closed.
    @Test func aRealUploadSucceedsWhileSlowHeadsHoldEverySlot() throws {
        let slots = 64
        let recorder = EventRecorder<SinkRequestEvent>()
        // Long idle and head timeouts: only shedding may free a slot here, however slow the machine.
        var configuration = SinkConfiguration(maxConnections: slots, idleTimeout: .seconds(30))
        configuration.headTimeout = .seconds(60)
        try withSink(configuration, recorder: recorder) { server in
            // Given: three times as many slow clients as slots, each with a head begun.
            var attackers: [SlowClient] = []
            for _ in 0..<(3 * slots) {
                let attacker = try SlowClient(port: server.port)
                attacker.send(Array("POST /slow HTTP/1.1\r\nX-Slow: ".utf8))
                attackers.append(attacker)
            }
            #expect(eventually { server.openConnectionCount == slots })

            // When: a real upload starts while every slow client sends one more byte each 100 ms.
            let body = (0..<262_144).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let upload = Self.uploadInBackground(port: server.port, body: body)
            var lastByte = ContinuousClock.now - .seconds(1)
            _ = eventually(within: .seconds(30)) {
                if ContinuousClock.now - lastByte >= .milliseconds(100) {  // the scenario's pace, not a wait
                    lastByte = ContinuousClock.now
                    for attacker in attackers {
                        attacker.send([UInt8(ascii: "x")])
                    }
                }
                return upload.isSet
            }

            // Then: it was answered 200 with the body's digest, and the earliest slow client was shed.
            let response = try #require(try upload.value.withLock { $0 }?.get())
            #expect(response.status == 200, "\(response.bodyText)")
            #expect(try response.json()["sha256"] as? String == sha256Hex(body))
            let shedAnswer = attackers[0].readToEnd()
            #expect(shedAnswer.hasPrefix("HTTP/1.1 503 "), "\(shedAnswer)")
            #expect(shedAnswer.contains("Retry-After: 1\r\n"))
            let stored = try #require(recorder.all.first { $0.path == "/real" })
            #expect(stored.status == 200 && stored.isComplete)
        }
    }

    /// Given every slot held by kept-alive connections idle between requests, a new client's
    /// upload gets in: the connection idle longest is closed silently to make room.
    @Test func idleKeptAliveConnectionsMakeRoomForANewClient() throws {
        let configuration = SinkConfiguration(maxConnections: 2, idleTimeout: .seconds(30))
        try withSink(configuration) { server in
            let first = try TestClient(port: server.port, receiveTimeout: .seconds(5))
            try first.send("GET /one HTTP/1.1\r\n\r\n")
            #expect(try first.readResponse().status == 200)
            let second = try TestClient(port: server.port)
            try second.send("GET /two HTTP/1.1\r\n\r\n")
            #expect(try second.readResponse().status == 200)

            let third = try TestClient(port: server.port)
            try third.send(uploadHead("Content-Length: 5") + "hello")
            #expect(try third.readResponse().status == 200)
            // The first connection, idle longest, was closed without an answer.
            #expect(try first.readUntilEnd() == (.endOfFile, 0))
            try second.send("GET /again HTTP/1.1\r\n\r\n")
            #expect(try second.readResponse().status == 200)
        }
    }

    /// When every slot holds a request (not a head), a new connection is still turned away.
    @Test func connectionsInsideARequestAreNeverShed() throws {
        let configuration = SinkConfiguration(maxConnections: 1, idleTimeout: .seconds(30))
        try withSink(configuration) { server in
            let busy = try TestClient(port: server.port)
            try busy.send(uploadHead("Transfer-Encoding: chunked", "Expect: 100-continue"))
            // The 100 Continue shows the head was taken in: the slot now holds a request.
            #expect(try busy.readResponse().status == 100)
            try busy.send("5\r\nhello\r\n")
            let probe = try TestClient(port: server.port)
            #expect(try probe.readResponse().status == 503)
            try busy.send("0\r\n\r\n")
            #expect(try busy.readResponse().status == 200)
        }
    }

    /// A head trickled steadily (one byte every 10 ms, well inside the idle timeout) is cut
    /// with 408 at the head timeout.
    @Test func aTrickledHeadIsCutAtTheHeadTimeout() throws {
        let recorder = EventRecorder<SinkRequestEvent>()
        var configuration = SinkConfiguration(idleTimeout: .seconds(30))
        configuration.headTimeout = .milliseconds(300)
        try withSink(configuration, recorder: recorder) { server in
            let client = try SlowClient(port: server.port)
            let head = Array(("POST /slow HTTP/1.1\r\nX-Pad: " + String(repeating: "a", count: 500)).utf8)
            guard case .answered = client.drip(head, every: .milliseconds(10)) else {
                Issue.record("the server never answered a head trickled for 5 s")
                return
            }
            #expect(client.readToEnd().hasPrefix("HTTP/1.1 408 "))
            let event = try #require(try recorder.wait(for: 1).first)
            #expect(event.status == 408 && !event.isComplete)
            #expect(event.failure == "request head not complete within 0.3 seconds")
        }
    }

    /// Time the sink itself spends throttled (``SinkFaults/readBytesPerSecond``) is not the
    /// client's: a head sent whole, which the throttled sink takes 3 s to read, is not cut at a
    /// 1 s head timeout.
    @Test func theSinksOwnThrottleDoesNotCountAgainstTheHead() throws {
        var configuration = SinkConfiguration(idleTimeout: .seconds(30), faults: SinkFaults(readBytesPerSecond: 1_000))
        configuration.headTimeout = .seconds(1)
        try withSink(configuration) { server in
            let client = try TestClient(port: server.port)
            try client.send(uploadHead("X-Pad: " + String(repeating: "p", count: 3_000), "Content-Length: 2") + "ok")
            #expect(try client.readResponse().status == 200)
        }
    }

    /// A connection that sends nothing at all is closed, silently, at the head timeout rather
    /// than at the (much longer) idle timeout.
    @Test func aSilentNewConnectionIsClosedAtTheHeadTimeout() throws {
        let recorder = EventRecorder<SinkRequestEvent>()
        var configuration = SinkConfiguration(idleTimeout: .seconds(30))
        configuration.headTimeout = .milliseconds(300)
        try withSink(configuration, recorder: recorder) { server in
            let client = try TestClient(port: server.port, receiveTimeout: .seconds(10))
            #expect(try client.readUntilEnd() == (.endOfFile, 0))
        }
        #expect(recorder.all.isEmpty)
    }

    /// The rate configuration for the body tests: 1,000 B/s with 300 ms of window and grace.
    private static func rateConfiguration() -> SinkConfiguration {
        var configuration = SinkConfiguration(idleTimeout: .seconds(30))
        configuration.minimumBodyRate = SinkBodyRate(
            bytesPerSecond: 1_000, window: .milliseconds(300), grace: .milliseconds(300))
        return configuration
    }

    /// A `Content-Length` body dripped at 250 B/s (under the 1,000 B/s minimum, yet never idle)
    /// is cut with 408 once its credit runs out (after about 0.4 s; the drip would last 4 s).
    @Test func aBodyDrippedBelowTheMinimumRateIsCut() throws {
        let recorder = EventRecorder<SinkRequestEvent>()
        try withSink(Self.rateConfiguration(), recorder: recorder) { server in
            let client = try SlowClient(port: server.port)
            #expect(client.send(Array(uploadHead("Content-Length: 1000").utf8)))
            let body = [UInt8](repeating: UInt8(ascii: "d"), count: 1_000)
            guard case .answered = client.drip(body, piece: 5, every: .milliseconds(20)) else {
                Issue.record("the server never cut a body dripped at 250 B/s")
                return
            }
            #expect(client.readToEnd().hasPrefix("HTTP/1.1 408 "))
            let event = try #require(try recorder.wait(for: 1).first)
            #expect(event.status == 408 && !event.isComplete && event.bodyByteCount > 0)
            #expect(event.failure == "body arrived slower than 1000 bytes per second")
        }
    }

    /// A chunk whose size line was sent but whose data is dripped is owed, so the rate applies.
    @Test func aChunkDrippedBelowTheMinimumRateIsCut() throws {
        try withSink(Self.rateConfiguration()) { server in
            let client = try SlowClient(port: server.port)
            #expect(client.send(Array((uploadHead("Transfer-Encoding: chunked") + "3e8\r\n").utf8)))
            let chunk = [UInt8](repeating: UInt8(ascii: "c"), count: 1_000)
            guard case .answered = client.drip(chunk, piece: 5, every: .milliseconds(20)) else {
                Issue.record("the server never cut a chunk dripped at 250 B/s")
                return
            }
            #expect(client.readToEnd().hasPrefix("HTTP/1.1 408 "))
        }
    }

    /// A live chunked stream that pauses between chunks for five times the window owes nothing
    /// meanwhile: it is not cut, and its body arrives whole.
    @Test func aLiveStreamMayPauseBetweenChunks() throws {
        try withSink(Self.rateConfiguration()) { server in
            let client = try SlowClient(port: server.port)
            let head = uploadHead("Transfer-Encoding: chunked", "Connection: close")
            #expect(client.send(Array((head + "6\r\nhello\n\r\n").utf8)))
            #expect(!client.hasAnswer(within: .milliseconds(1_500)))
            #expect(client.send(Array("6\r\nworld\n\r\n0\r\n\r\n".utf8)))
            let answer = client.readToEnd()
            #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer)")
            #expect(answer.contains(sha256Hex(Array("hello\nworld\n".utf8))))
        }
    }
}
