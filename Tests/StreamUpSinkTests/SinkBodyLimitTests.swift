import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUpSink

/// ``SinkConfiguration/maxBodyBytes``: a declared length over the limit is refused before any
/// body byte is read; a chunked body is cut once it passes the limit, with exactly the first
/// `limit` bytes kept as `.partial`; a resumable upload may not grow past the limit in total.
@Suite struct SinkBodyLimitTests {
    private static let limit = 100

    private static func configuration(_ directory: TemporaryDirectory) -> SinkConfiguration {
        var configuration = SinkConfiguration(outputDirectory: directory.path)
        configuration.maxBodyBytes = limit
        return configuration
    }

    /// A `Content-Length` over the limit is answered 413 from the head alone: the client has
    /// sent no body byte yet, and nothing is stored.
    @Test func aDeclaredLengthOverTheLimitIsRefusedUpFront() throws {
        let directory = try TemporaryDirectory()
        let recorder = EventRecorder<SinkRequestEvent>()
        try withSink(Self.configuration(directory), recorder: recorder) { server in
            let client = try TestClient(port: server.port)
            try client.send(uploadHead("Content-Length: \(Self.limit + 1)"))
            let response = try client.readResponse()
            #expect(response.status == 413)
            #expect(response.headers["connection"] == "close")
            #expect(try client.readUntilClosed())
            let event = try #require(try recorder.wait(for: 1).first)
            #expect(event.status == 413 && !event.isComplete && event.bodyByteCount == 0)
            #expect(event.failure == "the body of 101 bytes exceeds the limit of 100 bytes")
            #expect(try directory.fileNames().isEmpty)

            // Exactly the limit is fine.
            let next = try TestClient(port: server.port)
            try next.send(uploadHead("Content-Length: \(Self.limit)") + String(repeating: "x", count: Self.limit))
            #expect(try next.readResponse().status == 200)
        }
    }

    /// A chunked body is answered 413 once it passes the limit; the first `limit` bytes are kept
    /// as `.partial`, nothing past them.
    @Test func aChunkedBodyIsCutWhenItPassesTheLimit() throws {
        let directory = try TemporaryDirectory()
        let recorder = EventRecorder<SinkRequestEvent>()
        try withSink(Self.configuration(directory), recorder: recorder) { server in
            let client = try TestClient(port: server.port)
            try client.send(uploadHead("Transfer-Encoding: chunked"))
            let body = Array(repeating: UInt8(ascii: "y"), count: 150)
            try client.sendChunked(body, chunkSizes: [30])
            let response = try client.readResponse()
            #expect(response.status == 413)
            #expect(try client.readUntilClosed())
            let event = try #require(try recorder.wait(for: 1).first)
            #expect(event.status == 413 && !event.isComplete)
            #expect(event.bodyByteCount == Self.limit)
            #expect(event.failure == "the body exceeds the limit of 100 bytes")
            #expect(try directory.fileNames() == ["00000001-POST.partial"])
            let stored = try Data(contentsOf: URL(fileURLWithPath: "\(directory.path)/00000001-POST.partial"))
            #expect(stored.count == Self.limit)
        }
    }

    /// A resumable upload counts all its appends: a PATCH that would take it past the limit is
    /// refused up front, and a chunked one is cut at the limit; the upload keeps what it held.
    @Test func aResumableUploadMayNotGrowPastTheLimit() throws {
        let directory = try TemporaryDirectory()
        try withSink(Self.configuration(directory)) { server in
            let client = try TestClient(port: server.port)
            let path = try client.createUpload(Array(repeating: UInt8(ascii: "a"), count: 60))

            let declared = try TestClient(port: server.port)
            try declared.send(Resumable.append(path, offset: 60, complete: true, length: 41))
            #expect(try declared.readFinalResponse().final.status == 413)
            #expect(try client.retrieveOffset(path).headers["upload-offset"] == "60")

            let chunked = try TestClient(port: server.port)
            try chunked.send(
                Resumable.head(
                    method: "PATCH", path: path,
                    [
                        "Upload-Draft-Interop-Version: 6", "Upload-Offset: 60", "Upload-Complete: ?1",
                        "Content-Type: application/partial-upload", "Transfer-Encoding: chunked",
                    ]))
            try chunked.sendChunked(Array(repeating: UInt8(ascii: "b"), count: 50), chunkSizes: [10])
            #expect(try chunked.readFinalResponse().final.status == 413)
            #expect(try client.retrieveOffset(path).headers["upload-offset"] == "\(Self.limit)")
        }
    }
}
