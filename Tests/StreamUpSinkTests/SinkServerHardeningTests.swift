import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUpSink

/// The live server against hostile or broken clients: every case ends in a clear status, a
/// closed connection, an event, and a server that keeps serving.
@Suite struct SinkServerHardeningTests {
    /// Sends `bytes`, expects `status` and a closed connection, then checks a fresh request works.
    private func expectRejection(
        _ bytes: [UInt8], status: Int, configuration: SinkConfiguration = SinkConfiguration()
    ) throws -> SinkRequestEvent? {
        let recorder = EventRecorder<SinkRequestEvent>()
        return try withSink(configuration, recorder: recorder) { server in
            let client = try TestClient(port: server.port)
            try client.send(bytes)
            let response = try client.readResponse()
            #expect(response.status == status)
            #expect(response.headers["connection"] == "close")
            #expect(try response.json()["status"] as? Int == status)
            #expect(try client.readUntilClosed())

            let next = try TestClient(port: server.port)
            try next.send("GET /after HTTP/1.1\r\n\r\n")
            #expect(try next.readResponse().status == 200)
            return recorder.all.first { $0.status == status }
        }
    }

    /// A malformed chunk size answers 400, closes, and the server serves the next connection.
    @Test func malformedChunkSizeAnswers400AndTheServerKeepsServing() throws {
        let directory = try TemporaryDirectory()
        let bytes = Array((uploadHead("Transfer-Encoding: chunked") + "5\r\nhello\r\nzz\r\n").utf8)
        let event = try #require(try expectRejection(bytes, status: 400, configuration: SinkConfiguration(outputDirectory: directory.path)))
        #expect(!event.isComplete)
        #expect(event.method == "POST")
        #expect(event.bodyByteCount == 5)
        #expect(event.failure == "invalid chunk size")
        #expect(try directory.fileNames() == ["00000001-POST.partial"])
    }

    /// Data not followed by CRLF answers 400.
    @Test func chunkDataWithoutCRLFAnswers400() throws {
        _ = try expectRejection(Array((uploadHead("Transfer-Encoding: chunked") + "3\r\nabcdef").utf8), status: 400)
    }

    /// A header section over the limit answers 431, even with more header bytes still coming.
    @Test func oversizedHeadersAnswer431() throws {
        let big = uploadHead("X-Filler: " + String(repeating: "f", count: 40_000))
        let event = try expectRejection(Array(big.utf8), status: 431)
        #expect(event?.method == "")
    }

    /// A chunk-size line over the limit answers 400.
    @Test func overlongChunkSizeLineAnswers400() throws {
        let text = uploadHead("Transfer-Encoding: chunked") + "1;" + String(repeating: "e", count: 5_000) + "\r\nx\r\n0\r\n\r\n"
        let event = try expectRejection(Array(text.utf8), status: 400)
        #expect(event?.failure == "chunk-size line exceeds 1024 bytes")
    }

    /// Content-Length together with Transfer-Encoding answers 400.
    @Test func conflictingFramingAnswers400() throws {
        let text = uploadHead("Content-Length: 4", "Transfer-Encoding: chunked") + "4\r\nabcd\r\n0\r\n\r\n"
        _ = try expectRejection(Array(text.utf8), status: 400)
    }

    /// A body over the in-memory cap answers 413.
    @Test func bodyOverTheMemoryCapAnswers413() throws {
        let configuration = SinkConfiguration(keepBodiesInMemory: true, maxBodyBytesInMemory: 10)
        _ = try expectRejection(Array((uploadHead("Content-Length: 11") + "0123456789A").utf8), status: 413, configuration: configuration)
    }

    /// A client that vanishes mid-body yields an incomplete event and a `.partial` file only.
    @Test func clientVanishingMidBodyIsReportedIncompleteAndNotStoredAsComplete() throws {
        let directory = try TemporaryDirectory()
        let recorder = EventRecorder<SinkRequestEvent>()
        try withSink(SinkConfiguration(outputDirectory: directory.path), recorder: recorder) { server in
            let client = try TestClient(port: server.port)
            try client.send(uploadHead("Content-Length: 1000") + "only ten b")
            client.close()

            let event = try #require(try recorder.wait(for: 1).first)
            #expect(!event.isComplete)
            #expect(event.status == 0)
            #expect(event.bodyByteCount == 10)
            #expect(event.failure == "client closed the connection")
            #expect(event.storedFile?.hasSuffix("00000001-POST.partial") == true)
            #expect(try directory.fileNames() == ["00000001-POST.partial"])

            let next = try TestClient(port: server.port)
            try next.send(uploadHead("Content-Length: 2") + "ok")
            #expect(try next.readResponse().status == 200)
            #expect(try directory.fileNames() == ["00000001-POST.partial", "00000002-POST.body"])
        }
    }

    /// A silent connection is closed after the idle timeout, without an event.
    @Test func idleTimeoutClosesASilentConnection() throws {
        let recorder = EventRecorder<SinkRequestEvent>()
        try withSink(SinkConfiguration(idleTimeout: .milliseconds(200)), recorder: recorder) { server in
            let client = try TestClient(port: server.port)
            let started = ContinuousClock.now
            #expect(try client.readUntilClosed())
            #expect(ContinuousClock.now - started >= .milliseconds(150))
        }
        #expect(recorder.all.isEmpty)
    }

    /// A connection that goes silent mid-request gets 408 and an incomplete event.
    @Test func idleTimeoutMidRequestAnswers408() throws {
        let recorder = EventRecorder<SinkRequestEvent>()
        try withSink(SinkConfiguration(idleTimeout: .milliseconds(200)), recorder: recorder) { server in
            let client = try TestClient(port: server.port)
            try client.send(uploadHead("Transfer-Encoding: chunked") + "10\r\nabc")
            let response = try client.readResponse()
            #expect(response.status == 408)
            #expect(try client.readUntilClosed())
            let event = try #require(try recorder.wait(for: 1).first)
            #expect(event.status == 408 && !event.isComplete && event.bodyByteCount == 3)
        }
    }

    /// Connections beyond the limit are answered 503 and closed while every admitted one is
    /// inside a request (an idle one would be shed instead, see `SinkSlowClientTests`); the
    /// admitted one still works.
    @Test func connectionsBeyondTheLimitAreTurnedAwayWith503() throws {
        let recorder = EventRecorder<SinkRequestEvent>()
        try withSink(SinkConfiguration(maxConnections: 1), recorder: recorder) { server in
            let admitted = try TestClient(port: server.port)
            try admitted.send(uploadHead("Transfer-Encoding: chunked", "Expect: 100-continue"))
            #expect(try admitted.readResponse().status == 100)

            let extra = try TestClient(port: server.port)
            let response = try extra.readResponse()
            #expect(response.status == 503)
            #expect(try extra.readUntilClosed())

            try admitted.send("5\r\nhello\r\n0\r\n\r\n")
            #expect(try admitted.readResponse().status == 200)
        }
        #expect(recorder.all.map(\.status).sorted() == [200, 503])
    }

    /// Random garbage on many connections never brings the server down.
    @Test func garbageInputNeverCrashesTheServer() throws {
        var random = SeededRandom(seed: 4)
        try withSink(SinkConfiguration(maxHeaderBytes: 512, maxChunkLineBytes: 16, idleTimeout: .seconds(5))) { server in
            for round in 0..<30 {
                let client = try TestClient(port: server.port)
                var bytes = random.bytes(Int.random(in: 1...2_000, using: &random))
                if round % 3 == 0 {
                    bytes = Array(uploadHead("Transfer-Encoding: chunked").utf8) + bytes
                }
                try client.send(bytes)
                client.finishSending()
                _ = try client.readUntilClosed()
            }
            let client = try TestClient(port: server.port)
            try client.send("GET / HTTP/1.1\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        }
    }
}
