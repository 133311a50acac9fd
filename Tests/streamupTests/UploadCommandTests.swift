import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

/// End to end: the built `streamup` binary streaming stdin into the real sink over loopback.
@Suite(.timeLimit(.minutes(3))) struct UploadCommandTests {
    /// 50 MiB of random stdin arrive byte for byte: the stored body's SHA-256 equals the input's.
    /// As one request, the one body holds it all; in acknowledged segments (the default, with
    /// `--records none` since random bytes have no lines) every request is at most 8 MiB and
    /// answered 200, and the sink's merged stream holds it all.
    @Test(arguments: [["--single-request"], ["--records", "none"]])
    func fiftyMebibytesOfRandomStdinArriveIntact(mode: [String]) async throws {
        let input = try await randomFile(bytes: 50 << 20)
        defer { try? FileManager.default.removeItem(atPath: input.path) }
        try await withSink { sink, directory in
            let child = try StreamupProcess(mode + [sink.url.absoluteString + "ingest"], stdinFile: input.path)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let requests = sink.requests
            #expect(requests.allSatisfy { $0.isComplete && $0.status == 200 })
            if mode == ["--single-request"] {
                let event = try #require(requests.last)
                #expect(requests.count == 1 && event.bodyByteCount == 50 << 20 && event.sha256 == input.sha256)
            } else {
                #expect(requests.count >= 7 && requests.allSatisfy { $0.bodyByteCount <= 8 << 20 }, "\(requests.map(\.bodyByteCount))")
            }
            let stored = try #require(mode == ["--single-request"] ? requests.last?.storedFile : streamFile(in: directory))
            #expect(try await sha256sum(stored) == input.sha256)
        }
    }

    /// Without a URL (the README's first command), streamup streams to a local sink and prints
    /// what it stored, the same in every delivery mode: the whole stream's bytes and SHA-256.
    @Test(arguments: [[], ["--retries", "2", "--segment-bytes", "1000"], ["--resumable", "--segment-bytes", "1000"]])
    func dryRunPrintsWhatTheLocalSinkStored(options: [String]) async throws {
        let input = try await randomFile(bytes: 3_000)
        defer { try? FileManager.default.removeItem(atPath: input.path) }
        let child = try StreamupProcess(options, stdinFile: input.path)
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        #expect(child.stdout == #"{"bytes":3000,"sha256":"\#(input.sha256)"}"# + "\n")
    }

    /// A slow writer: each line is at the sink before the next one is written, while stdin
    /// stays open: as one live request at once; in segments (complete bodies) once the
    /// segment's time (1 s here) ends it, not when a block fills or stdin closes.
    @Test(arguments: [["--segment-seconds", "1s"], ["--single-request"]])
    func eachLineReachesTheSinkBeforeTheNextIsWritten(mode: [String]) async throws {
        try await withSink { sink, directory in
            let child = try StreamupProcess(mode + [sink.url.absoluteString])
            var expected = ""
            for index in 1...5 {
                let line = "line \(index) at \(Date().timeIntervalSince1970)\n"
                child.write(line)
                expected += line
                let arrived = await eventually {
                    let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
                    return files.contains { name in
                        (try? String(contentsOfFile: directory.appendingPathComponent(name).path, encoding: .utf8)) == expected
                    }
                }
                #expect(arrived, "line \(index) did not reach the sink while stdin stayed open")
                try await Task.sleep(for: .milliseconds(200))  // the scenario: a writer that writes every 200 ms
            }
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(storedText(in: directory, sink: sink, mode: mode) == expected)
        }
    }

    /// The request carries the chosen content type and headers, and no `Expect` field at all:
    /// not `Expect: 100-continue` (which would delay the first byte by a second), and not an
    /// empty `Expect:` either, which gunicorn 27 answers `417 Expectation Failed` (seen in a
    /// trial, 2026-11-25). A segment is a complete body with its `Content-Length`, not chunked;
    /// the single request is chunked.
    @Test(arguments: [[], ["--single-request"]])
    func requestCarriesHeadersAndNoExpectField(mode: [String]) async throws {
        try await withSink { sink, _ in
            let child = try StreamupProcess(
                mode + ["-H", "X-Stream: app-1", "--content-type", "application/x-ndjson", "-X", "PUT", sink.url.absoluteString + "logs"])
            child.write("{\"a\":1}\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let event = try #require(sink.requests.last)
            #expect(event.method == "PUT")
            #expect(event.path == "/logs")
            #expect(event.headers.first(named: "X-Stream") == "app-1")
            #expect(event.headers.first(named: "Content-Type") == "application/x-ndjson")
            if mode.isEmpty {
                #expect(event.headers.first(named: "Content-Length") == "8")
                #expect(event.headers.first(named: "Transfer-Encoding") == nil)
            } else {
                #expect(event.headers.first(named: "Transfer-Encoding") == "chunked")
            }
            #expect(event.headers.first(named: "Expect") == nil, "\(event.headers)")
        }
    }

    /// An idle stdin longer than the response timeout does not end the stream (as one request,
    /// the idle body stays open; in segments, no request is open while stdin is idle).
    @Test(arguments: [[], ["--single-request"]])
    func idleStdinOutlivesTheResponseTimeout(mode: [String]) async throws {
        try await withSink { sink, directory in
            let child = try StreamupProcess(mode + ["--response-timeout", "1s", sink.url.absoluteString])
            child.write("before the pause\n")
            try await Task.sleep(for: .milliseconds(2500))  // the scenario: a producer idle past the timeout
            child.write("after the pause\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(storedText(in: directory, sink: sink, mode: mode) == "before the pause\nafter the pause\n")
        }
    }

    /// SIGTERM mid-stream ends the body cleanly: every byte read so far arrives, exit 0.
    @Test(arguments: [[], ["--single-request"]])
    func sigtermEndsTheBodyCleanlyAndKeepsWhatWasRead(mode: [String]) async throws {
        try await withSink { sink, directory in
            let child = try StreamupProcess(mode + [sink.url.absoluteString])
            child.write("first\nsecond\n")
            #expect(
                await eventually {
                    let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
                    return files.contains { (try? String(contentsOfFile: directory.appendingPathComponent($0).path, encoding: .utf8)) == "first\nsecond\n" }
                })
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(sink.requests.allSatisfy { $0.isComplete })
            #expect(storedText(in: directory, sink: sink, mode: mode) == "first\nsecond\n")
        }
    }

    /// Without a URL, stdin goes to an embedded local sink whose summary is printed.
    @Test func withoutURLItStreamsToAnEmbeddedSink() async throws {
        let child = try StreamupProcess([])
        child.write("hello\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        // SHA-256 of "hello\n".
        #expect(child.stdout.contains("5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"))
        #expect(child.stdout.contains("\"bytes\":6"))
    }
}

/// What the sink stored of the stream: the last request's body as one request, the merged
/// stream (`Streamup-Stream-Id`) in segments.
private func storedText(in directory: URL, sink: SinkServer, mode: [String]) -> String? {
    guard mode.contains("--single-request") else { return streamText(in: directory) }
    return sink.requests.last?.storedFile.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }
}
