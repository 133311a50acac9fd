import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUpSink

/// The resumable-upload protocol (interop version 6) against a live server: creation, append,
/// offset retrieval, cancellation, conflicts, and bytes kept across cut connections.
@Suite struct ResumableUploadTests {
    private static func bytes(_ text: String) -> [UInt8] {
        Array(text.utf8)
    }

    private static func contents(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// A creation is answered `104` at once and `201`, both with the absolute upload URL built
    /// from `Host`; the `201` says nothing is held yet.
    @Test func creationAnswers104Then201WithAnAbsoluteLocation() throws {
        let directory = try TemporaryDirectory()
        try withSink(SinkConfiguration(outputDirectory: directory.path)) { server in
            let client = try TestClient(port: server.port)
            try client.send(Resumable.create(complete: false, length: 0))
            let answer = try client.readFinalResponse()
            let interim = try #require(answer.interim.first)
            #expect(answer.interim.count == 1)
            #expect(interim.status == 104)
            #expect(interim.headers["upload-draft-interop-version"] == "6")
            let location = try #require(interim.headers["location"])
            #expect(location.wholeMatch(of: /http:\/\/sink\/uploads\/[0-9a-f]{32}/) != nil)

            let created = answer.final
            #expect(created.status == 201)
            #expect(created.headers["location"] == location)
            #expect(created.headers["upload-complete"] == "?0")
            #expect(created.headers["upload-offset"] == "0")
            #expect(created.headers["upload-draft-interop-version"] == "6")
            #expect(created.headers["connection"] == "keep-alive")
            let token = try Resumable.path(of: location).dropFirst("/uploads/".count)
            #expect(try directory.fileNames() == ["upload-\(token).partial"])
        }
    }

    /// Without `Host` the URL names the listener; with the flag off no `104` is sent.
    @Test func locationFallsBackToTheListenerAnd104CanBeTurnedOff() throws {
        let configuration = SinkConfiguration(sendsUploadResumptionSupported: false)
        try withSink(configuration) { server in
            let client = try TestClient(port: server.port)
            try client.send(Resumable.create(complete: false, length: 2, host: nil) + "hi")
            let answer = try client.readFinalResponse()
            #expect(answer.interim.isEmpty)
            #expect(answer.final.status == 201)
            #expect(answer.final.headers["upload-offset"] == "2")
            let location = try #require(answer.final.headers["location"])
            #expect(location.hasPrefix("http://127.0.0.1:\(server.port)/uploads/"))
        }
    }

    /// Appends answer `201` with the new offset; the final one `200` with the usual summary of
    /// the whole upload, whose file holds every byte; the upload is then gone.
    @Test func appendsAdvanceTheOffsetAndTheLastCompletesTheUpload() throws {
        let directory = try TemporaryDirectory()
        let recorder = EventRecorder<SinkRequestEvent>()
        try withSink(SinkConfiguration(outputDirectory: directory.path), recorder: recorder) { server in
            let client = try TestClient(port: server.port)
            let path = try client.createUpload(Self.bytes("abc"))
            try client.send(Resumable.append(path, offset: 3, complete: false, length: 4) + "defg")
            let middle = try client.readResponse()
            #expect(middle.status == 201)
            #expect(middle.headers["upload-offset"] == "7")
            #expect(middle.headers["upload-complete"] == "?0")
            #expect(middle.headers["location"] == nil)

            try client.send(Resumable.append(path, offset: 7, complete: true, length: 2) + "hi")
            let last = try client.readResponse()
            #expect(last.status == 200)
            #expect(last.headers["upload-complete"] == "?1")
            #expect(last.headers["upload-offset"] == "9")
            #expect(last.headers["upload-draft-interop-version"] == "6")
            let json = try last.json()
            #expect(json["bytes"] as? Int == 9)
            #expect(json["sha256"] as? String == sha256Hex(Self.bytes("abcdefghi")))
            // The answer names the file, never the sink's own directory.
            #expect(json["file"] as? String == "upload-\(path.dropFirst("/uploads/".count)).body")
            let file = directory.file(try #require(json["file"] as? String))
            #expect(try Self.contents(file) == Self.bytes("abcdefghi"))

            let after = try client.retrieveOffset(path)
            #expect(after.status == 404)
            #expect(after.body.isEmpty)
            let events = try recorder.wait(for: 4)
            #expect(events.map(\.method) == ["POST", "PATCH", "PATCH", "HEAD"])
            #expect(events.map(\.status) == [201, 201, 200, 404])
            #expect(events.map(\.bodyByteCount) == [3, 4, 2, 0])
            #expect(events.map(\.uploadOffset) == [3, 7, 9, nil])
            #expect(events[2].sha256 == sha256Hex(Self.bytes("abcdefghi")) && events[2].storedFile == file)
        }
        #expect(try directory.fileNames().count == 1)
    }

    /// `Upload-Complete: ?1` on the creation is a whole upload in one request.
    @Test func aCompleteCreationIsAWholeUpload() throws {
        try withSink { server in
            let client = try TestClient(port: server.port)
            try client.send(Resumable.create(complete: true, length: 5) + "whole")
            let answer = try client.readFinalResponse()
            #expect(answer.interim.map(\.status) == [104])
            #expect(answer.final.status == 200)
            #expect(answer.final.headers["upload-complete"] == "?1")
            #expect(answer.final.headers["upload-offset"] == "5")
            #expect(try answer.final.json()["sha256"] as? String == sha256Hex(Self.bytes("whole")))
            let path = try Resumable.path(of: answer.final.headers["location"])
            #expect(try client.retrieveOffset(path).status == 404)
        }
    }

    /// A wrong `Upload-Offset` gets `409` with the bytes held, the upload stays, and the
    /// connection serves the next request.
    @Test func aWrongOffsetGets409WithTheHeldOffset() throws {
        try withSink { server in
            let client = try TestClient(port: server.port)
            let path = try client.createUpload(Self.bytes("abc"))
            try client.send(Resumable.append(path, offset: 5, complete: false, length: 2) + "xy")
            let conflict = try client.readResponse()
            #expect(conflict.status == 409)
            #expect(conflict.headers["upload-offset"] == "3")
            #expect(conflict.headers["upload-draft-interop-version"] == "6")
            #expect(try conflict.json()["upload_offset"] as? Int == 3)
            let offset = try client.retrieveOffset(path)
            #expect(offset.status == 204)
            #expect(offset.headers["upload-offset"] == "3")
            #expect(offset.headers["upload-complete"] == "?0")
            #expect(offset.headers["cache-control"] == "no-store")
            #expect(offset.headers["content-length"] == nil)
        }
    }

    /// Malformed protocol requests get `400` carrying the version the sink speaks.
    @Test func malformedRequestsGet400() throws {
        try withSink { server in
            let client = try TestClient(port: server.port)
            let path = try client.createUpload()
            let cases = [
                Resumable.append(path, offset: 0, complete: false, length: 1, contentType: "application/octet-stream") + "x",
                Resumable.head(
                    method: "PATCH", path: path,
                    [
                        "Upload-Draft-Interop-Version: 6", "Upload-Complete: ?0",
                        "Content-Type: application/partial-upload", "Content-Length: 1",
                    ]) + "x",
                Resumable.create(complete: false, length: 0, version: "7"),
                Resumable.create(complete: false, length: 0, version: "six"),
                Resumable.create(complete: false, length: 0, extra: ["Upload-Offset: 4"]),
                Resumable.head(method: "HEAD", path: path, ["Upload-Draft-Interop-Version: 6", "Upload-Offset: 0"]),
            ]
            for request in cases {
                try client.send(request)
                let response = try client.readResponse()
                #expect(response.status == 400, "\(request)")
                #expect(response.headers["upload-draft-interop-version"] == "6")
            }
            #expect(try client.retrieveOffset(path).headers["upload-offset"] == "0")
        }
    }

    /// Unknown uploads get `404`; other methods on an upload URL `405`.
    @Test func unknownUploadsAndOtherMethods() throws {
        try withSink { server in
            let client = try TestClient(port: server.port)
            let unknown = "/uploads/0123456789abcdef0123456789abcdef"
            try client.send(Resumable.append(unknown, offset: 0, complete: true, length: 1) + "x")
            #expect(try client.readResponse().status == 404)
            #expect(try client.retrieveOffset(unknown).status == 404)
            try client.send(Resumable.cancel(unknown))
            #expect(try client.readResponse().status == 404)
            try client.send(Resumable.head(method: "GET", path: unknown, ["Upload-Draft-Interop-Version: 6"]))
            let other = try client.readResponse()
            #expect(other.status == 405)
            #expect(other.headers["allow"] == "HEAD, PATCH, DELETE")
        }
    }

    /// A connection cut mid-`PATCH` keeps every byte the sink received: `HEAD` says how many,
    /// and a `PATCH` from there completes the upload with the whole input.
    @Test func bytesOfACutPatchAreKeptAndTheUploadResumes() throws {
        let directory = try TemporaryDirectory()
        let recorder = EventRecorder<SinkRequestEvent>()
        var random = SeededRandom(seed: 7)
        let input = random.bytes(1_000)
        try withSink(SinkConfiguration(outputDirectory: directory.path), recorder: recorder) { server in
            let setup = try TestClient(port: server.port)
            let path = try setup.createUpload()
            let cut = try TestClient(port: server.port)
            try cut.send(Array(Resumable.append(path, offset: 0, complete: true, length: 1_000).utf8) + input[0..<400])
            cut.close()
            let aborted = try #require(try recorder.wait(for: 2).last)
            #expect(aborted.method == "PATCH" && aborted.status == 0 && !aborted.isComplete)
            #expect(aborted.bodyByteCount == 400 && aborted.uploadOffset == 400)

            let offset = try setup.retrieveOffset(path)
            #expect(offset.status == 204)
            #expect(offset.headers["upload-offset"] == "400")
            try setup.send(Array(Resumable.append(path, offset: 400, complete: true, length: 600).utf8) + input[400...])
            let done = try setup.readResponse()
            #expect(done.status == 200)
            let file = directory.file(try #require(try done.json()["file"] as? String))
            #expect(try Self.contents(file) == input)
        }
    }

    /// A second `PATCH` while one is still attached gets `409`; a `HEAD` detaches the stale one
    /// (closing its connection, adding none of its later bytes) and the next `PATCH` succeeds.
    @Test func aHeadDetachesAStaleAppend() throws {
        let directory = try TemporaryDirectory()
        let recorder = EventRecorder<SinkRequestEvent>()
        try withSink(SinkConfiguration(outputDirectory: directory.path), recorder: recorder) { server in
            let client = try TestClient(port: server.port)
            let path = try client.createUpload(Self.bytes("0123"))
            let stale = try TestClient(port: server.port)
            try stale.send(Resumable.append(path, offset: 4, complete: true, length: 100, extra: ["Expect: 100-continue"]))
            #expect(try stale.readResponse().status == 100)  // attached from here on

            try client.send(Resumable.append(path, offset: 4, complete: false, length: 1) + "x")
            let busy = try client.readResponse()
            #expect(busy.status == 409)
            #expect(busy.headers["upload-offset"] == "4")

            let offset = try client.retrieveOffset(path)
            #expect(offset.status == 204 && offset.headers["upload-offset"] == "4")
            #expect(try stale.readUntilEnd().ending != .timedOut)
            try? stale.send(String(repeating: "s", count: 100))

            try client.send(Resumable.append(path, offset: 4, complete: true, length: 4) + "4567")
            let done = try client.readResponse()
            #expect(done.status == 200)
            let file = directory.file(try #require(try done.json()["file"] as? String))
            #expect(try Self.contents(file) == Self.bytes("01234567"))
            let staleEvent = try #require(try recorder.wait(for: 5).first { $0.method == "PATCH" && $0.status == 0 })
            #expect(staleEvent.failure == "upload taken over by another request")
        }
    }

    /// `DELETE` answers `204`, removes the partial file, and the upload is gone.
    @Test func deleteCancelsTheUpload() throws {
        let directory = try TemporaryDirectory()
        try withSink(SinkConfiguration(outputDirectory: directory.path)) { server in
            let client = try TestClient(port: server.port)
            let path = try client.createUpload(Self.bytes("abc"))
            try client.send(Resumable.cancel(path))
            let cancelled = try client.readResponse()
            #expect(cancelled.status == 204)
            #expect(cancelled.headers["upload-draft-interop-version"] == "6")
            #expect(try client.retrieveOffset(path).status == 404)
            try client.send(Resumable.append(path, offset: 3, complete: true, length: 1) + "d")
            #expect(try client.readResponse().status == 404)
            try client.send(Resumable.cancel(path))
            #expect(try client.readResponse().status == 404)
        }
        #expect(try directory.fileNames().isEmpty)
    }

    /// Requests without `Upload-Draft-Interop-Version`, or not shaped like the protocol, are
    /// ordinary requests, stored and answered as before.
    @Test func requestsOutsideTheProtocolAreUnchanged() throws {
        let directory = try TemporaryDirectory()
        try withSink(SinkConfiguration(outputDirectory: directory.path)) { server in
            let client = try TestClient(port: server.port)
            let requests = [
                Resumable.head(method: "PATCH", path: "/uploads/abc", ["Upload-Offset: 0", "Content-Length: 2"]) + "hi",
                Resumable.head(method: "POST", path: "/x", ["Upload-Complete: ?0", "Content-Length: 2"]) + "hi",
                Resumable.head(method: "POST", path: "/x", ["Upload-Draft-Interop-Version: 6", "Content-Length: 2"]) + "hi",
            ]
            for request in requests {
                try client.send(request)
                let response = try client.readResponse()
                #expect(response.status == 200)
                #expect(response.headers["upload-draft-interop-version"] == nil)
                #expect(try response.json()["bytes"] as? Int == 2)
            }
        }
        #expect(try directory.fileNames() == ["00000001-PATCH.body", "00000002-POST.body", "00000003-POST.body"])
    }

    /// An injected failure answers a protocol request like any other, with the version field.
    @Test func failNextAppliesToProtocolRequests() throws {
        try withSink(SinkConfiguration(faults: SinkFaults(failNextRequests: 1, failStatus: 503))) { server in
            let client = try TestClient(port: server.port)
            try client.send(Resumable.create(complete: false, length: 1) + "a")
            let failed = try client.readFinalResponse()
            #expect(failed.interim.isEmpty)
            #expect(failed.final.status == 503)
            #expect(failed.final.headers["retry-after"] == "1")
            #expect(failed.final.headers["upload-draft-interop-version"] == "6")
            let path = try client.createUpload(Self.bytes("a"))
            #expect(try client.retrieveOffset(path).headers["upload-offset"] == "1")
        }
    }
}
