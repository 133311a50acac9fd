import Foundation
import StreamUpSystem
import StreamUpTestSupport
import Testing

@testable import StreamUpSink

/// Resumable uploads against a client that creates them by the thousand and never comes back:
/// a cap on open uploads, expiry of idle ones, and no file descriptor held by an idle upload.
@Suite(.timeLimit(.minutes(1))) struct ResumableUploadLimitTests {
    /// How many of this process's descriptors are open on files inside `directory`
    /// (`/proc/self/fd`), so other tests running alongside don't count.
    private static func descriptors(into directory: String) -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter { entry in
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(entry)")
            return target?.hasPrefix(directory + "/") == true
        }.count
    }

    /// Sends a creation of an empty, incomplete upload and returns the final answer.
    private static func create(_ client: TestClient) throws -> TestResponse {
        try client.send(Resumable.create(complete: false, length: 0))
        return try client.readFinalResponse().final
    }

    /// With room for 3 open uploads, the 4th creation is refused with 503 and `Retry-After`;
    /// completing one makes room again.
    @Test func creationsOverTheLimitAreRefusedWith503() throws {
        var configuration = SinkConfiguration()
        configuration.maxUploads = 3
        let recorder = EventRecorder<SinkRequestEvent>()
        try withSink(configuration, recorder: recorder) { server in
            let client = try TestClient(port: server.port)
            var paths: [String] = []
            for _ in 0..<3 {
                paths.append(try client.createUpload())
            }
            let refused = try Self.create(client)
            #expect(refused.status == 503)
            #expect(refused.headers["retry-after"] == "1")
            #expect(refused.headers["upload-draft-interop-version"] == "6")
            #expect(refused.headers["location"] == nil)
            let reason = try #require(try refused.json()["error"] as? String)
            #expect(reason == "the sink holds its limit of 3 open uploads; complete or cancel one, or retry later")
            #expect(server.openUploadCount == 3)
            #expect(recorder.all.last?.status == 503)

            try client.send(Resumable.append(paths[0], offset: 0, complete: true, length: 2) + "ok")
            #expect(try client.readResponse().status == 200)
            #expect(try Self.create(client).status == 201)
        }
    }

    /// Uploads nobody touches for the expiry are forgotten: their URLs answer 404, they no
    /// longer count against the limit, an empty one's file is removed and a non-empty one's is
    /// kept as `.partial`.
    @Test func idleUploadsExpire() throws {
        let directory = try TemporaryDirectory()
        var configuration = SinkConfiguration(outputDirectory: directory.path)
        configuration.maxUploads = 2
        configuration.uploadExpiry = .milliseconds(200)
        try withSink(configuration) { server in
            let client = try TestClient(port: server.port)
            let empty = try client.createUpload()
            let holding = try client.createUpload(Array("kept".utf8))
            #expect(try directory.fileNames().count == 2)

            // Poll (with a deadline) until each upload is gone: it has expired. (Asking for the
            // offset does not count as activity.)
            for path in [empty, holding] {
                try #require(try eventually { try client.retrieveOffset(path).status == 404 }, "upload \(path) never expired")
            }
            #expect(server.openUploadCount == 0)
            let token = holding.dropFirst("/uploads/".count)
            #expect(try directory.fileNames() == ["upload-\(token).partial"])
            #expect(try Data(contentsOf: URL(fileURLWithPath: "\(directory.path)/upload-\(token).partial")) == Data("kept".utf8))
            #expect(try Self.create(client).status == 201)
            #expect(try Self.create(client).status == 201)
        }
    }

    /// An upload being appended to does not expire, however long the append lasts; it expires
    /// once idle.
    @Test func anUploadInUseDoesNotExpire() throws {
        var configuration = SinkConfiguration()
        configuration.uploadExpiry = .milliseconds(100)
        try withSink(configuration) { server in
            let client = try TestClient(port: server.port)
            let path = try client.createUpload()
            try client.send(
                Resumable.head(
                    method: "PATCH", path: path,
                    [
                        "Upload-Draft-Interop-Version: 6", "Upload-Offset: 0", "Upload-Complete: ?1",
                        "Content-Type: application/partial-upload", "Transfer-Encoding: chunked",
                    ]) + "3\r\nabc\r\n")
            // Other requests (each runs the expiry sweep) come and go while the append is open.
            let other = try TestClient(port: server.port)
            for _ in 0..<5 {
                #expect(try Self.create(other).status == 201)
                Thread.sleep(forTimeInterval: 0.05)  // the scenario: the append stays open past the expiry
            }
            try client.send("3\r\ndef\r\n0\r\n\r\n")
            let done = try client.readResponse()
            #expect(done.status == 200)
            #expect(try done.json()["bytes"] as? Int == 6)
        }
    }

    /// Idle uploads hold no descriptor: after 200 creations with bytes, none of the 200
    /// `.partial` files is open; one is open only while a request appends to it.
    @Test func idleUploadsHoldNoDescriptor() throws {
        let directory = try TemporaryDirectory()
        try withSink(SinkConfiguration(outputDirectory: directory.path)) { server in
            let client = try TestClient(port: server.port)
            var paths: [String] = []
            for index in 0..<200 {
                paths.append(try client.createUpload(Array("part \(index)".utf8)))
            }
            #expect(try directory.fileNames().count == 200)
            #expect(Self.descriptors(into: directory.path) == 0)

            try client.send(
                Resumable.head(
                    method: "PATCH", path: paths[0],
                    [
                        "Upload-Draft-Interop-Version: 6", "Upload-Offset: 6", "Upload-Complete: ?1",
                        "Content-Type: application/partial-upload", "Transfer-Encoding: chunked", "Expect: 100-continue",
                    ]))
            #expect(try client.readResponse().status == 100)
            #expect(Self.descriptors(into: directory.path) == 1)
            try client.send("1\r\n!\r\n0\r\n\r\n")
            #expect(try client.readResponse().status == 200)
            #expect(Self.descriptors(into: directory.path) == 0)
        }
    }

    /// A creation storm (2,000 empty creations on 20 connections at once, limit 100) leaves
    /// exactly 100 uploads and refuses the rest with 503; during it, no more descriptors are open
    /// on upload files than there are requests in flight (20), and none after.
    @Test func aCreationStormIsBoundedInUploadsAndDescriptors() throws {
        let directory = try TemporaryDirectory()
        var configuration = SinkConfiguration(outputDirectory: directory.path)
        configuration.maxUploads = 100
        try withSink(configuration) { server throws in
            let port = server.port
            let statuses = Locked<[Int]>([])
            // Samples the descriptors open on upload files until the storm is over.
            let peak = Locked(0)
            let stormOver = Locked(false)
            let sampled = Locked(false)
            let path = directory.path
            Thread.detachNewThread {
                var last = false
                repeat {
                    last = stormOver.withLock { $0 }
                    let open = Self.descriptors(into: path)
                    peak.withLock { $0 = max($0, open) }
                    if !last { Thread.sleep(forTimeInterval: 0.005) }  // the sampling rate, not a wait
                } while !last
                sampled.withLock { $0 = true }
            }
            DispatchQueue.concurrentPerform(iterations: 20) { _ in
                var mine: [Int] = []
                do {
                    let client = try TestClient(port: port)
                    for _ in 0..<100 {
                        mine.append(try Self.create(client).status)
                    }
                } catch {
                    mine.append(-1)
                }
                statuses.withLock { $0 += mine }
            }
            stormOver.withLock { $0 = true }
            try #require(eventually { sampled.withLock { $0 } }, "the sampler never finished")
            #expect(peak.withLock { $0 } <= 20)
            let all = statuses.withLock { $0 }
            #expect(all.count == 2_000)
            #expect(all.filter { $0 == 201 }.count == 100)
            #expect(all.filter { $0 == 503 }.count == 1_900)
            #expect(server.openUploadCount == 100)
            #expect(Self.descriptors(into: directory.path) == 0)
            #expect(try directory.fileNames().count == 100)
        }
    }
}
