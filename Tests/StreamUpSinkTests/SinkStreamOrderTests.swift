import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUpSink

/// Bodies of one de-duplicated stream arriving out of order (a sender with several segments in
/// flight), against a live server: held aside past the end, joined when the gap fills, bounded,
/// kept across a restart.
@Suite struct SinkStreamOrderTests {
    private static func streamHead(id: String = "w", offset: Int, length: Int) -> String {
        uploadHead("Content-Length: \(length)", "Streamup-Stream-Id: \(id)", "Streamup-Offset: \(offset)")
    }

    private static func contents(_ path: String) -> String? {
        (try? Data(contentsOf: URL(fileURLWithPath: path))).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Sends the stream's bytes `offset..<offset+count` of `text` and reads the answer.
    private static func send(_ client: TestClient, _ text: String, offset: Int, count: Int, id: String = "w") throws -> TestResponse {
        let bytes = Array(text.utf8)[offset..<(offset + count)]
        try client.send(Array(streamHead(id: id, offset: offset, length: count).utf8) + bytes)
        return try client.readResponse()
    }

    private static let alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

    /// Bodies past the end are answered 200 and held aside; the stream file holds only the
    /// contiguous prefix; when the first body arrives, all of them join at once.
    @Test func piecesPastTheEndAreHeldAndJoinWhenTheGapFills() throws {
        let directory = try TemporaryDirectory()
        let text = Self.alphabet
        let stream = "\(directory.path)/stream-w.body"
        try withSink(SinkConfiguration(outputDirectory: directory.path)) { server in
            let client = try TestClient(port: server.port)
            for offset in [20, 10] {
                let held = try Self.send(client, text, offset: offset, count: 10)
                #expect(held.status == 200)
                #expect(try held.json()["stream_offset"] as? Int == 0)
                #expect(Self.contents(stream) ?? "" == "")
            }
            #expect(
                try directory.fileNames().filter { $0.hasSuffix(".aside") } == ["stream-w.10-20.00000002-POST.aside", "stream-w.20-30.00000001-POST.aside"])
            let filled = try Self.send(client, text, offset: 0, count: 10)
            #expect(filled.status == 200)
            #expect(try filled.json()["stream_offset"] as? Int == 30)
            #expect(Self.contents(stream) == String(text.prefix(30)))
            #expect(try directory.fileNames() == ["stream-w.body"])
        }
    }

    /// Resends and overlapping pieces, held and joined, are de-duplicated by offset: the file is
    /// the stream once, whatever overlaps whatever.
    @Test func resendsAndOverlapsAsideAreDeduplicatedByOffset() throws {
        let directory = try TemporaryDirectory()
        let text = Self.alphabet
        let stream = "\(directory.path)/stream-w.body"
        try withSink(SinkConfiguration(outputDirectory: directory.path)) { server in
            let client = try TestClient(port: server.port)
            // Held: a piece, its resend, one overlapping its end, one inside it, one beyond.
            for (offset, count) in [(10, 10), (10, 10), (15, 10), (12, 4), (30, 5)] {
                #expect(try Self.send(client, text, offset: offset, count: count).status == 200)
                #expect(Self.contents(stream) ?? "" == "")
            }
            // Fills 0..<12 (overlapping the first piece): joins through 25; 25..<30 is still a gap.
            let first = try Self.send(client, text, offset: 0, count: 12)
            #expect(try first.json()["stream_offset"] as? Int == 25)
            #expect(Self.contents(stream) == String(text.prefix(25)))
            #expect(try directory.fileNames() == ["stream-w.30-35.00000005-POST.aside", "stream-w.body"])
            // A resend of joined bytes reaching into the gap, then the gap itself, overlapping both sides.
            #expect(try Self.send(client, text, offset: 20, count: 7).json()["stream_offset"] as? Int == 27)
            #expect(try Self.send(client, text, offset: 26, count: 6).json()["stream_offset"] as? Int == 35)
            #expect(Self.contents(stream) == String(text.prefix(35)))
            #expect(try directory.fileNames() == ["stream-w.body"])
        }
    }

    /// Many connections send the segments of one stream at once, in shuffled order (47, fewer
    /// than the 64 a stream may hold aside, so none is refused however they arrive): every one is
    /// answered 200 and the file ends up as the whole stream, with nothing left aside.
    @Test func concurrentConnectionsForOneStreamJoinEverySegment() async throws {
        let directory = try TemporaryDirectory()
        var random = SeededRandom()
        var text = ""
        for _ in 0..<28 { text += Self.alphabet }
        let segment = 37
        var offsets = Array(stride(from: 0, to: text.utf8.count, by: segment))
        offsets.shuffle(using: &random)
        let whole = text
        try await SinkServer.withRunning(SinkConfiguration(outputDirectory: directory.path)) { server in
            let port = server.port
            try await withThrowingTaskGroup(of: Int.self) { group in
                for offset in offsets {
                    group.addTask {
                        let client = try TestClient(port: port)
                        let count = min(segment, whole.utf8.count - offset)
                        return try Self.send(client, whole, offset: offset, count: count).status
                    }
                }
                for try await status in group {
                    #expect(status == 200)
                }
            }
        }
        #expect(Self.contents("\(directory.path)/stream-w.body") == whole, "\(random)")
        #expect(try directory.fileNames() == ["stream-w.body"])
    }

    /// Past the pieces or bytes a stream may hold aside, a body past the end gets 503 with
    /// Retry-After and is not kept; a body the file can take is accepted even then, and frees room.
    @Test func holdingAsideIsBoundedWith503() throws {
        let directory = try TemporaryDirectory()
        let text = Self.alphabet
        let configuration = SinkConfiguration(outputDirectory: directory.path, maxStreamBytesAside: 10, maxStreamPiecesAside: 2)
        let recorder = EventRecorder<SinkRequestEvent>()
        try withSink(configuration, recorder: recorder) { server in
            let client = try TestClient(port: server.port)
            #expect(try Self.send(client, text, offset: 10, count: 4).status == 200)
            let tooLarge = try Self.send(client, text, offset: 20, count: 7)
            #expect(tooLarge.status == 503 && tooLarge.headers["retry-after"] == "1")
            #expect(try tooLarge.json()["expected_offset"] as? Int == 0)
            #expect(try Self.send(client, text, offset: 20, count: 6).status == 200)
            let tooMany = try Self.send(client, text, offset: 30, count: 1)
            #expect(tooMany.status == 503 && tooMany.headers["retry-after"] == "1")
            #expect(try directory.fileNames() == ["stream-w.10-14.00000001-POST.aside", "stream-w.20-26.00000003-POST.aside"])
            let event = try #require(try recorder.wait(for: 4).last)
            #expect(event.status == 503 && event.storedFile == nil)
            // The oldest segment always passes; the held ones join and make room.
            #expect(try Self.send(client, text, offset: 0, count: 12).json()["stream_offset"] as? Int == 14)
            #expect(try Self.send(client, text, offset: 30, count: 1).status == 200)
            #expect(Self.contents("\(directory.path)/stream-w.body") == String(text.prefix(14)))
        }
    }

    /// A body past the end that alone is more than a stream may hold aside is told to come
    /// again once the bytes before it are in, in words that say so (not that the stream holds
    /// too much: it holds nothing); it then passes.
    @Test func aBodyTooLargeToHoldAsideIsRefusedForWhatItIs() throws {
        let directory = try TemporaryDirectory()
        let text = Self.alphabet
        let recorder = EventRecorder<SinkRequestEvent>()
        try withSink(SinkConfiguration(outputDirectory: directory.path, maxStreamBytesAside: 10), recorder: recorder) { server in
            let client = try TestClient(port: server.port)
            let refused = try Self.send(client, text, offset: 10, count: 11)
            #expect(refused.status == 503 && refused.headers["retry-after"] == "1")
            let said =
                "a body of 11 bytes past the stream's end (0) is more than may be held aside (10 bytes): it is taken once the bytes before it have arrived"
            #expect(try refused.json()["error"] as? String == said)
            #expect(try recorder.wait(for: 1).last?.failure == said + ": retry")
            #expect(try Self.send(client, text, offset: 0, count: 10).status == 200)
            #expect(try Self.send(client, text, offset: 10, count: 11).json()["stream_offset"] as? Int == 21)
        }
        #expect(Self.contents("\(directory.path)/stream-w.body") == String(text.prefix(21)))
    }

    /// Pieces aside are bounded for the whole sink, not only per stream: many streams each
    /// within their own bound cannot fill the disk. Past the sink's bound a stream with room of
    /// its own gets 503 saying so; the body its file can take still passes, and a stream that
    /// joins frees room for the others.
    @Test func piecesAsideAreBoundedForTheWholeSink() throws {
        let directory = try TemporaryDirectory()
        let text = Self.alphabet
        let recorder = EventRecorder<SinkRequestEvent>()
        try withSink(SinkConfiguration(outputDirectory: directory.path, maxPiecesAside: 2), recorder: recorder) { server in
            let client = try TestClient(port: server.port)
            #expect(try Self.send(client, text, offset: 5, count: 5, id: "a").status == 200)
            #expect(try Self.send(client, text, offset: 5, count: 5, id: "b").status == 200)
            let refused = try Self.send(client, text, offset: 5, count: 5, id: "c")
            #expect(refused.status == 503 && refused.headers["retry-after"] == "1")
            let said = "the sink holds as much aside for all its streams as it may, 1 GiB or 2 bodies"
            #expect(try refused.json()["error"] as? String == said)
            #expect(try recorder.wait(for: 3).last?.failure == said + ": retry")
            #expect(try Self.send(client, text, offset: 0, count: 5, id: "c").status == 200)
            #expect(try Self.send(client, text, offset: 0, count: 5, id: "a").json()["stream_offset"] as? Int == 10)
            #expect(try Self.send(client, text, offset: 5, count: 5, id: "c").json()["stream_offset"] as? Int == 10)
        }
        #expect(try directory.fileNames() == ["stream-a.body", "stream-b.5-10.00000002-POST.aside", "stream-c.body"])
    }

    /// A resumable upload bound to the stream that fills the gap lets the pieces held past it
    /// join, as a plain request would.
    @Test func anUploadThatFillsTheGapJoinsTheHeldPieces() throws {
        let directory = try TemporaryDirectory()
        let text = Self.alphabet
        try withSink(SinkConfiguration(outputDirectory: directory.path)) { server in
            let client = try TestClient(port: server.port)
            #expect(try Self.send(client, text, offset: 10, count: 10).status == 200)
            let path = try client.createUpload(Array(text.utf8)[0..<5].map { $0 }, extra: ["Streamup-Stream-Id: w", "Streamup-Offset: 0"])
            #expect(Self.contents("\(directory.path)/stream-w.body") == String(text.prefix(5)))
            try client.send(Resumable.append(path, offset: 5, complete: true, length: 6) + String(text.dropFirst(5).prefix(6)))
            #expect(try client.readResponse().status == 200)
        }
        #expect(Self.contents("\(directory.path)/stream-w.body") == String(text.prefix(20)))
        #expect(try directory.fileNames() == ["stream-w.body"])
    }

    /// Pieces held aside survive a restart of the sink: the next run holds them again and joins
    /// them when the gap fills.
    @Test func piecesHeldAsideSurviveARestart() throws {
        let directory = try TemporaryDirectory()
        let text = Self.alphabet
        try withSink(SinkConfiguration(outputDirectory: directory.path)) { server in
            let client = try TestClient(port: server.port)
            #expect(try Self.send(client, text, offset: 0, count: 5).status == 200)
            #expect(try Self.send(client, text, offset: 10, count: 10).status == 200)
            #expect(try Self.send(client, text, offset: 25, count: 5).status == 200)
        }
        #expect(Self.contents("\(directory.path)/stream-w.body") == String(text.prefix(5)))
        try withSink(SinkConfiguration(outputDirectory: directory.path, maxStreamPiecesAside: 2)) { server in
            let client = try TestClient(port: server.port)
            // Both earlier pieces count against the bound of the new run.
            #expect(try Self.send(client, text, offset: 40, count: 1).status == 503)
            // A resend of a held piece, as this run's second request (the earlier one's number).
            #expect(try Self.send(client, text, offset: 10, count: 10).status == 200)
            #expect(try Self.send(client, text, offset: 5, count: 6).json()["stream_offset"] as? Int == 20)
            #expect(try Self.send(client, text, offset: 20, count: 5).json()["stream_offset"] as? Int == 30)
        }
        #expect(Self.contents("\(directory.path)/stream-w.body") == String(text.prefix(30)))
        #expect(try directory.fileNames() == ["stream-w.body"])
    }
}
