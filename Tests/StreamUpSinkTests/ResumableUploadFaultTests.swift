import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUpSink

/// Resumable uploads under injected faults, and uploads merged into de-duplicated streams.
@Suite struct ResumableUploadFaultTests {
    private static func contents(_ path: String) throws -> String {
        String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
    }

    private static func streamHeaders(_ id: String, offset: Int) -> [String] {
        ["Streamup-Stream-Id: \(id)", "Streamup-Offset: \(offset)"]
    }

    /// `conflictForgetsUpload`: a PATCH at the wrong offset gets 409 and, as in
    /// NIOResumableUpload, the upload is gone (HEAD → 404); without the fault it stays.
    @Test(arguments: [true, false]) func conflictForgetsTheUploadOnlyWhenAsked(forgets: Bool) throws {
        let configuration = SinkConfiguration(faults: SinkFaults(conflictForgetsUpload: forgets))
        try withSink(configuration) { server in
            let control = try TestClient(port: server.port)
            let path = try control.createUpload()
            let client = try TestClient(port: server.port)
            try client.send(Array(Resumable.append(path, offset: 5, complete: false, length: 3).utf8) + Array("abc".utf8))
            #expect(try client.readResponse().status == 409)
            #expect(try control.retrieveOffset(path).status == (forgets ? 404 : 204))
        }
    }

    /// `--drop-after 100 --drop-every` cuts every `PATCH` at 100 bytes; each keeps what it
    /// delivered, so resuming from the offset `HEAD` reports completes the upload.
    @Test func dropEveryCutsPatchesAndTheUploadKeepsTheirBytes() throws {
        let directory = try TemporaryDirectory()
        var random = SeededRandom(seed: 11)
        let input = random.bytes(250)
        let configuration = SinkConfiguration(
            outputDirectory: directory.path, faults: SinkFaults(dropAfterBytes: 100, dropRepeatedly: true))
        try withSink(configuration) { server in
            let control = try TestClient(port: server.port)
            let path = try control.createUpload()
            var offset = 0
            var rounds = 0
            while true {
                rounds += 1
                let client = try TestClient(port: server.port)
                let rest = input.count - offset
                try client.send(Array(Resumable.append(path, offset: offset, complete: true, length: rest).utf8) + input[offset...])
                if rest <= 100 {
                    let done = try client.readResponse()
                    #expect(done.status == 200)
                    let file = directory.file(try #require(try done.json()["file"] as? String))
                    #expect(Array(try Data(contentsOf: URL(fileURLWithPath: file))) == input)
                    break
                }
                #expect(try client.readUntilEnd().ending == .reset)
                let held = try control.retrieveOffset(path)
                #expect(held.status == 204)
                #expect(held.headers["upload-offset"] == String(offset + 100))
                offset += 100
            }
            #expect(rounds == 3)
        }
    }

    /// `forgetUploadsAfterBytes`: the connection carrying that byte is reset, every upload is
    /// forgotten (`404`), a connection appending to another upload is closed, and uploads
    /// created afterwards work (the fault fires once).
    @Test func forgettingUploadsAnswers404Afterwards() throws {
        let recorder = EventRecorder<SinkRequestEvent>()
        let configuration = SinkConfiguration(faults: SinkFaults(forgetUploadsAfterBytes: 150))
        try withSink(configuration, recorder: recorder) { server in
            let control = try TestClient(port: server.port)
            let other = try control.createUpload(Array(repeating: 1, count: 10))
            let waiting = try TestClient(port: server.port)
            try waiting.send(Resumable.append(other, offset: 10, complete: true, length: 50, extra: ["Expect: 100-continue"]))
            #expect(try waiting.readResponse().status == 100)  // attached to `other`
            let client = try TestClient(port: server.port)
            let path = try client.createUpload(Array(repeating: 2, count: 100))
            try client.send(Resumable.append(path, offset: 100, complete: false, length: 100) + String(repeating: "x", count: 100))
            #expect(try client.readUntilEnd().ending == .reset)
            #expect(try waiting.readUntilEnd().ending != .timedOut)
            let events = try recorder.wait(for: 4)
            let forgetting = try #require(events.first { $0.path == path && $0.method == "PATCH" })
            #expect(forgetting.failure == "injected fault: resumable uploads forgotten after 150 upload bytes")
            #expect(forgetting.bodyByteCount == 40)
            let cut = try #require(events.first { $0.path == other && $0.method == "PATCH" })
            #expect(cut.failure == "upload cancelled or forgotten meanwhile")
            #expect(try control.retrieveOffset(path).status == 404)
            #expect(try control.retrieveOffset(other).status == 404)

            let again = try control.createUpload(Array(repeating: 3, count: 200))
            #expect(try control.retrieveOffset(again).headers["upload-offset"] == "200")
        }
    }

    /// Out-of-range values are refused.
    @Test func forgetAfterZeroBytesIsRefused() {
        #expect(throws: SinkError.self) {
            _ = try SinkServer(configuration: SinkConfiguration(faults: SinkFaults(forgetUploadsAfterBytes: 0)))
        }
    }

    /// An upload created with stream headers writes into the stream live; after the sink forgets
    /// it, a new upload from the client's last acknowledged offset continues the stream with no
    /// gap and no duplicate.
    @Test func aRecreatedUploadContinuesTheStream() throws {
        let directory = try TemporaryDirectory()
        let configuration = SinkConfiguration(
            outputDirectory: directory.path, faults: SinkFaults(forgetUploadsAfterBytes: 13))
        try withSink(configuration) { server in
            let client = try TestClient(port: server.port)
            // The stream's first 10 bytes arrive as a plain request.
            try client.send(uploadHead("Content-Length: 10", "Streamup-Stream-Id: job", "Streamup-Offset: 0") + "0123456789")
            #expect(try client.readResponse().status == 200)

            let path = try client.createUpload(Array("ABCDE".utf8), extra: Self.streamHeaders("job", offset: 10))
            try client.send(Resumable.append(path, offset: 5, complete: false, length: 5) + "FGHIJ")
            let acknowledged = try client.readResponse()
            #expect(acknowledged.headers["upload-offset"] == "10")
            let stream = "\(directory.path)/stream-job.body"
            #expect(try Self.contents(stream) == "0123456789ABCDEFGHIJ")

            // Byte 13 of upload traffic: every upload is forgotten mid-PATCH ("KLM" got in).
            try client.send(Resumable.append(path, offset: 10, complete: true, length: 10) + "KLMNOPQRST")
            #expect(try client.readUntilEnd().ending == .reset)
            let again = try TestClient(port: server.port)
            #expect(try again.retrieveOffset(path).status == 404)
            #expect(try Self.contents(stream) == "0123456789ABCDEFGHIJKLM")

            // Recreated from the last acknowledged offset (10 + 10): "KLM" is dropped as duplicate.
            try again.send(Resumable.create(complete: true, length: 10, extra: Self.streamHeaders("job", offset: 20)) + "KLMNOPQRST")
            let done = try again.readFinalResponse().final
            #expect(done.status == 200)
            let json = try done.json()
            #expect(json["stream_offset"] as? Int == 30)
            #expect(json["file"] as? String == stream.split(separator: "/").last.map(String.init))
            #expect(try Self.contents(stream) == "0123456789ABCDEFGHIJKLMNOPQRST")
            #expect(try directory.fileNames().filter { $0.hasPrefix("upload-") }.isEmpty)
        }
    }

    /// A creation whose stream offset is past the stream's end is refused with `409`.
    @Test func aCreationPastTheStreamEndIsAGap() throws {
        let directory = try TemporaryDirectory()
        try withSink(SinkConfiguration(outputDirectory: directory.path)) { server in
            let client = try TestClient(port: server.port)
            try client.send(uploadHead("Content-Length: 4", "Streamup-Stream-Id: g", "Streamup-Offset: 0") + "abcd")
            #expect(try client.readResponse().status == 200)
            try client.send(Resumable.create(complete: false, length: 2, extra: Self.streamHeaders("g", offset: 6)) + "gh")
            let answer = try client.readFinalResponse()
            #expect(answer.interim.isEmpty)
            #expect(answer.final.status == 409)
            #expect(try answer.final.json()["expected_offset"] as? Int == 4)
            #expect(answer.final.headers["upload-draft-interop-version"] == "6")
        }
    }

    /// Plain requests and resumable uploads of one stream, all at once and overlapping, leave
    /// the stream file equal to the stream.
    @Test func plainRequestsAndUploadsOfOneStreamDoNotCorruptIt() async throws {
        let directory = try TemporaryDirectory()
        var random = SeededRandom(seed: 5)
        let text = random.bytes(48_000)
        try await SinkServer.withRunning(SinkConfiguration(outputDirectory: directory.path)) { server in
            let port = server.port
            // Each request resends the stream from 0 up to its own end, half of them as resumable
            // uploads in two parts, half as plain requests: all succeed in any order.
            try await withThrowingTaskGroup(of: Int.self) { group in
                for (index, end) in stride(from: 4_000, through: text.count, by: 4_000).enumerated() {
                    group.addTask {
                        let client = try TestClient(port: port)
                        let body = Array(text[0..<end])
                        let headers = ["Streamup-Stream-Id: mixed", "Streamup-Offset: 0"]
                        if index % 2 == 0 {
                            let half = body.count / 2
                            let path = try client.createUpload(Array(body[..<half]), extra: headers)
                            try client.send(
                                Array(Resumable.append(path, offset: half, complete: true, length: body.count - half).utf8)
                                    + body[half...])
                            return try client.readResponse().status
                        }
                        try client.send(Array(Resumable.head(method: "POST", path: "/plain", headers + ["Content-Length: \(body.count)"]).utf8) + body)
                        return try client.readResponse().status
                    }
                }
                for try await status in group {
                    #expect(status == 200)
                }
            }
        }
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: "\(directory.path)/stream-mixed.body"))) == text)
    }
}
