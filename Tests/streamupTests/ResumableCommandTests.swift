import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

/// `--resumable`: the built binary speaking the IETF resumable-upload protocol to the sink,
/// which implements the server side and merges the upload into `stream-ID.body`.
@Suite(.timeLimit(.minutes(3))) struct ResumableCommandTests {
    /// 100 MB through a sink that cuts every PATCH after 1 MB and, like NIOResumableUpload,
    /// forgets an upload on any 409: after each cut a HEAD says how much the sink kept and the
    /// next PATCH starts exactly there. One upload carries the whole stream, the stored stream
    /// equals the input, and the sink received each byte once (none sent twice, not merely dropped).
    /// Long set: `DeliveryMachineTests.resumableCreatesAppendsChecksAndCompletes` and
    /// ``aKilledUploadResumesFromTheSpoolWhereTheServerIs`` show the HEAD and the resumed PATCH.
    @Test(.long) func survivesADropEveryMegabyteWithoutLossOrDuplicate() async throws {
        let input = try await randomFile(bytes: 100_000_000)
        defer { try? FileManager.default.removeItem(atPath: input.path) }
        try await withSink(configure: { configuration in
            configuration.faults = SinkFaults(dropAfterBytes: 1_000_000, dropRepeatedly: true, conflictForgetsUpload: true)
            configuration.recentEventLimit = 10_000
        }) { sink, directory in
            let child = try StreamupProcess(["--resumable", "--retries", "10", sink.url.absoluteString], stdinFile: input.path)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(try await sha256sum(try #require(streamFile(in: directory))) == input.sha256)
            let requests = sink.requests
            let patched = requests.filter { $0.method == "PATCH" }.reduce(0) { $0 + $1.bodyByteCount }
            #expect(patched == 100_000_000, "the sink received \(patched) PATCH bytes")
            #expect(requests.filter { $0.method == "HEAD" }.count >= 99)
            #expect(requests.filter { $0.method == "POST" }.count == 1, "the upload was lost and created again")
        }
    }

    /// The sink restarts mid-stream and forgets the upload (HEAD → 404): streamup creates a new
    /// upload at the acknowledged offset, which the sink joins to the same stream.
    @Test func aForgottenUploadContinuesAsANewOneWithoutGap() async throws {
        let restarted = try await expectNothingLostAcrossASinkRestart(["--resumable", "--retries", "forever", "--segment-seconds", "200ms"])
        // The restarted sink saw a new upload created.
        #expect(restarted.contains { $0.method == "POST" && $0.status == 201 })
    }

    /// `--resumable --spool`, killed with SIGKILL while the sink holds part of a PATCH (it
    /// stops reading after 2,000 bytes, so the kill never races the upload's end, however
    /// loaded the machine): the restart asks the sink (HEAD) how much of the same upload it
    /// holds and sends only the rest from the spool. The stream is whole and no byte reached the
    /// sink twice.
    @Test func aKilledUploadResumesFromTheSpoolWhereTheServerIs() async throws {
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        let spool = work.appendingPathComponent("spool").path
        let input = (1...5_000).map { "\($0)\n" }.joined()
        try await withSink(configure: { $0.faults = SinkFaults(stallAfterBytes: 2_000) }) { sink, directory in
            let first = try StreamupProcess(["-v", "--resumable", "--spool", spool, sink.url.absoluteString])
            first.write(input)
            // Given part of the stream at the sink and all of it in the spool (the progress
            // line counts what was read into the spool)...
            #expect(await eventually { (streamText(in: directory)?.utf8.count ?? 0) >= 2_000 })
            #expect(await eventually { first.stderr.contains("read \(input.utf8.count) bytes") })
            first.signal(SIGKILL)
            _ = await first.waitForExit()
            // ...a restart with nothing new on stdin delivers exactly the rest.
            let record = (try? String(contentsOfFile: spool + "/stream.json", encoding: .utf8)) ?? "none"
            let second = try StreamupProcess(["-v", "--resumable", "--spool", spool, sink.url.absoluteString])
            second.closeStdin()
            #expect(await second.waitForExit() == 0, "stderr: \(second.stderr)")
            #expect(streamText(in: directory) == input)
            let requests = sink.requests
            #expect(
                requests.filter { $0.method == "POST" }.count == 1,
                "one upload, resumed; spool record \(record); first: \(first.stderr.suffix(3000)) second: \(second.stderr.prefix(3000))")
            #expect(requests.contains { $0.method == "HEAD" })
            // The stalled PATCH holds the first 2,000 bytes; the resumed ones carry exactly the rest.
            let patched = requests.filter { $0.method == "PATCH" && $0.isComplete }.reduce(0) { $0 + $1.bodyByteCount }
            #expect(patched == input.utf8.count - 2_000, "the sink received \(patched) PATCH bytes after the first 2,000 of \(input.utf8.count)")
        }
    }

    /// The answer to the completing PATCH is lost after the sink completed (and forgot) the
    /// upload: streamup's HEAD gets 404, and since every byte was acknowledged it reports the
    /// upload complete instead of creating an empty duplicate.
    @Test func aLostCompletionAnswerDoesNotCreateAnotherUpload() async throws {
        try await withSink(configure: { $0.faults = SinkFaults(loseAnswers: 1) }) { sink, directory in
            let child = try StreamupProcess(["-v", "--resumable", "--retries", "3", sink.url.absoluteString])
            child.write("the only line\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(streamText(in: directory) == "the only line\n")
            let requests = sink.requests
            #expect(requests.filter { $0.method == "POST" }.count == 1, "\(requests.map { "\($0.method) \($0.status)" })")
            #expect(requests.last?.method == "HEAD" && requests.last?.status == 404)
            #expect(child.stderr.contains("the answer to the completing request was lost"))
        }
    }

    /// A creation answer whose `Location` names another origin (another port here) gets the
    /// upload's requests without the credentials: they go only to the origin the user named,
    /// as curl sends them without --location-trusted. Other header fields still go.
    @Test func credentialsStayWithTheOriginTheUserNamed() async throws {
        let elsewhere = try StubHTTPServer(.answerAfterBody(status: 404, body: "no such upload"))
        defer { elsewhere.stop() }
        let named = try StubHTTPServer(.answerEarly(status: 201, headers: ["Location: http://127.0.0.1:\(elsewhere.port)/uploads/1"]))
        defer { named.stop() }
        let child = try StreamupProcess([
            "--resumable", "--retries", "forever", "-H", "Authorization: Bearer s3cret-token", "-H", "X-Api-Key: k3y", "-H", "X-Trace: t1",
            named.url,
        ])
        child.write("data\n")
        #expect(await eventually { !elsewhere.receivedHeads.isEmpty }, "stderr: \(child.stderr)")
        let creation = try #require(named.receivedHeads.first).lowercased()
        #expect(creation.contains("authorization: bearer s3cret-token") && creation.contains("x-api-key: k3y"))
        let upload = try #require(elsewhere.receivedHeads.first).lowercased()
        #expect(upload.hasPrefix("patch /uploads/1 "), "\(upload)")
        #expect(!upload.contains("s3cret-token") && !upload.contains("k3y"), "credentials went to another origin: \(upload)")
        #expect(upload.contains("x-trace: t1"))
    }

    /// A server that does not speak the protocol (200 without `Location`) is a clear error,
    /// not a silent plain upload.
    @Test func aServerWithoutTheProtocolIsAClearError() async throws {
        let server = try StubHTTPServer(.answerEarly(status: 200, body: "ok"))
        defer { server.stop() }
        let child = try StreamupProcess(["--resumable", server.url])
        child.write("data\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 2, "stderr: \(child.stderr)")
        #expect(child.stderr.contains("does not speak resumable uploads"))
    }
}
