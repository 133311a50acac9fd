import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUpSink

/// Stream de-duplication (`Streamup-Stream-Id` + `Streamup-Offset`) against a live server.
@Suite struct SinkStreamTests {
    private static func streamHead(id: String = "job-1", offset: Int, length: Int) -> String {
        uploadHead("Content-Length: \(length)", "Streamup-Stream-Id: \(id)", "Streamup-Offset: \(offset)")
    }

    private static func contents(_ path: String) throws -> String {
        String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
    }

    /// Overlapping re-sends are merged so the stream file is exactly the stream; each response
    /// carries the stream's length, and the per-request files are gone.
    @Test func overlappingRangesAreMergedIntoOneFile() throws {
        let directory = try TemporaryDirectory()
        let recorder = EventRecorder<SinkRequestEvent>()
        try withSink(SinkConfiguration(outputDirectory: directory.path), recorder: recorder) { server in
            let client = try TestClient(port: server.port)
            let parts: [(Int, String, Int)] = [(0, "0123456789", 10), (5, "56789ABCDE", 15), (15, "FGHIJ", 20)]
            for (offset, body, expected) in parts {
                try client.send(Self.streamHead(offset: offset, length: body.utf8.count) + body)
                let response = try client.readResponse()
                #expect(response.status == 200)
                #expect(try response.json()["stream_offset"] as? Int == expected)
            }
            let path = "\(directory.path)/stream-job-1.body"
            #expect(try Self.contents(path) == "0123456789ABCDEFGHIJ")
            #expect(try directory.fileNames() == ["stream-job-1.body"])
            let events = try recorder.wait(for: 3)
            #expect(events.allSatisfy { $0.isComplete && $0.storedFile == path })
        }
    }

    /// A body cut off mid-way leaves the stream file unchanged and is kept as `.partial`.
    @Test func anIncompleteBodyLeavesTheStreamUnchanged() throws {
        let directory = try TemporaryDirectory()
        let recorder = EventRecorder<SinkRequestEvent>()
        try withSink(SinkConfiguration(outputDirectory: directory.path), recorder: recorder) { server in
            let first = try TestClient(port: server.port)
            try first.send(Self.streamHead(offset: 0, length: 4) + "abcd")
            #expect(try first.readResponse().status == 200)
            let cut = try TestClient(port: server.port)
            try cut.send(Self.streamHead(offset: 4, length: 10) + "efg")
            cut.close()
            let event = try #require(try recorder.wait(for: 2).last)
            #expect(!event.isComplete && event.bodyByteCount == 3)
            #expect(try Self.contents("\(directory.path)/stream-job-1.body") == "abcd")
            #expect(try directory.fileNames() == ["00000002-POST.partial", "stream-job-1.body"])
        }
    }

    /// Concurrent requests of one stream serialise: the file ends up as the whole stream.
    @Test func concurrentRequestsOfOneStreamSerialise() async throws {
        let directory = try TemporaryDirectory()
        let text = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)
        try await SinkServer.withRunning(SinkConfiguration(outputDirectory: directory.path)) { server in
            let port = server.port
            // Every request resends the stream from 0 up to its own end: all succeed in any order.
            try await withThrowingTaskGroup(of: Int.self) { group in
                for end in stride(from: 4, through: text.count, by: 4) {
                    group.addTask {
                        let client = try TestClient(port: port)
                        try client.send(Array(Self.streamHead(id: "c", offset: 0, length: end).utf8) + text[0..<end])
                        return try client.readResponse().status
                    }
                }
                for try await status in group {
                    #expect(status == 200)
                }
            }
        }
        #expect(try Self.contents("\(directory.path)/stream-c.body") == String(decoding: text, as: UTF8.self))
    }

    /// Malformed stream headers answer 400; ids are sanitised into the file name.
    @Test func malformedHeadersAreRefusedAndIdsSanitised() throws {
        let directory = try TemporaryDirectory()
        try withSink(SinkConfiguration(outputDirectory: directory.path)) { server in
            let bad = try TestClient(port: server.port)
            try bad.send(uploadHead("Content-Length: 1", "Streamup-Stream-Id: s", "Streamup-Offset: -1") + "x")
            #expect(try bad.readResponse().status == 400)
            let missing = try TestClient(port: server.port)
            try missing.send(uploadHead("Content-Length: 1", "Streamup-Stream-Id: s") + "x")
            #expect(try missing.readResponse().status == 400)
            let odd = try TestClient(port: server.port)
            try odd.send(Self.streamHead(id: "../a b", offset: 0, length: 1) + "x")
            #expect(try odd.readResponse().status == 200)
        }
        #expect(try directory.fileNames().contains("stream-%2E%2E%2Fa%20b.body"))
        #expect(StreamStore.fileName(forStreamID: "") == nil)
    }

    /// Ids that differ only in characters a file name cannot hold as they are (`/`, a space, a
    /// tab, `%`, `é`) each get a file of their own: none is taken for another's resend and
    /// dropped behind a 200. An id too long for a file name is refused (400), not cut short
    /// into another's name.
    @Test func idsThatDifferKeepFilesOfTheirOwn() throws {
        let directory = try TemporaryDirectory()
        let ids = ["p/q", "p q", "p\tq", "p_q", "p%2Fq", "p%q", "pé", "p\u{00C3}\u{00A9}", String(repeating: "a", count: 128)]
        try withSink(SinkConfiguration(outputDirectory: directory.path)) { server in
            let client = try TestClient(port: server.port)
            for (index, id) in ids.enumerated() {
                try client.send(Array(Self.streamHead(id: id, offset: 0, length: 2).utf8) + Array("\(index)\n".utf8))
                let response = try client.readResponse()
                #expect(response.status == 200, "\(id)")
                #expect(try response.json()["stream_offset"] as? Int == 2, "\(id)")
            }
            let long = try TestClient(port: server.port)
            try long.send(Self.streamHead(id: String(repeating: "a", count: 129), offset: 0, length: 2) + "x\n")
            let refused = try long.readResponse()
            #expect(refused.status == 400)
            #expect(refused.bodyText.contains("Streamup-Stream-Id"))
        }
        let names = try directory.fileNames()
        #expect(names.count == ids.count)
        for (index, id) in ids.enumerated() {
            let name = try #require(StreamStore.fileName(forStreamID: id))
            #expect(names.contains(name), "\(id)")
            #expect(try Self.contents("\(directory.path)/\(name)") == "\(index)\n", "\(id)")
        }
    }

    /// An offset so large that the body's end would not fit in an integer answers 400 and the
    /// sink goes on (it used to trap on the overflow: one request took the process down).
    @Test func anOffsetNearTheIntegerLimitIsRefused() throws {
        let directory = try TemporaryDirectory()
        try withSink(SinkConfiguration(outputDirectory: directory.path)) { server in
            for offset in [Int.max, Int.max - 1, 1 << 62 + 1] {
                let huge = try TestClient(port: server.port)
                try huge.send(Self.streamHead(id: "z", offset: offset, length: 2) + "q\n")
                let response = try huge.readResponse()
                #expect(response.status == 400, "offset \(offset)")
            }
            let next = try TestClient(port: server.port)
            try next.send(Self.streamHead(id: "z", offset: 0, length: 2) + "q\n")
            #expect(try next.readResponse().status == 200)
        }
        #expect(try Self.contents("\(directory.path)/stream-z.body") == "q\n")
    }

    /// Without the headers a request is stored in its own file, as before.
    @Test func requestsWithoutStreamHeadersAreUnchanged() throws {
        let directory = try TemporaryDirectory()
        try withSink(SinkConfiguration(outputDirectory: directory.path)) { server in
            let client = try TestClient(port: server.port)
            try client.send(uploadHead("Content-Length: 3") + "abc")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(try response.json()["stream_offset"] == nil)
        }
        #expect(try directory.fileNames() == ["00000001-POST.body"])
    }
}
