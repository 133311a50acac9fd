import Foundation
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

    /// `--drop-after 100 --drop-every` cuts every `PATCH` at 100 bytes; each keeps what it
    /// delivered, so resuming from the offset `HEAD` reports completes the upload.
    @Test func dropEveryCutsPatchesAndTheUploadKeepsTheirBytes() throws {
        let directory = try TemporaryDirectory()
        var random = SeededRandom(seed: 11)
        let input = random.bytes(250)
        let configuration = SinkConfiguration(
            outputDirectory: directory.path, faults: SinkFaults(dropAfterBytes: 100, dropEveryRequest: true))
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
                    let file = try #require(try done.json()["file"] as? String)
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
                            try client.send(Array(Resumable.append(path, offset: half, complete: true, length: body.count - half).utf8)
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
