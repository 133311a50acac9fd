import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

/// The built binary through a real nginx (Debian's 1.22) in front of the sink: what a trial by
/// hand found to work (2026-11-25), kept working. nginx is a reverse proxy nobody on the team
/// wrote, with its defaults except HTTP/1.1 to the upstream.
@Suite(.timeLimit(.minutes(2)), .enabled(if: Nginx.isAvailable)) struct ReverseProxyTests {
    /// Lines of about 30 bytes, `count` of them.
    private func lines(_ count: Int) -> String {
        (1...count).map { "line \($0) through nginx\n" }.joined()
    }

    /// nginx answers 413 to a body over `client_max_body_size` before reading it and closes the
    /// connection; Documentation/Delivery.md: "a 413 makes every later segment half as big as the refused
    /// request", never less than one record. 300 KB through a 64 KiB limit: every line once.
    @Test func segmentsOverNginxsBodyLimitShrinkUntilTheyPass() async throws {
        try await withSink { sink, directory in
            try await Nginx.with(proxyingTo: sink.url, bodyLimit: "64k") { nginx in
                let input = lines(10_000)
                let child = try StreamupProcess([nginx.url.absoluteString + "ingest"])
                child.write(input)
                child.closeStdin()
                #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
                #expect(streamText(in: directory) == input)
                #expect(child.stderr.contains("413"), "stderr: \(child.stderr)")
                #expect(nginx.accessLog.contains("\" 413 "), "\(nginx.accessLog)")
                #expect(sink.requests.allSatisfy { $0.bodyByteCount <= 64 << 10 })
            }
        }
    }

    /// nginx's request-rate limit (`limit_req`, here answered 429 without Retry-After) refuses
    /// quick retries whatever their size: segments go on at their size and arrive whole, once;
    /// none is taken as too large for the limit ("429 … twice"), which once shrank them to one
    /// record a request and the stream to the limit's rate in lines.
    @Test func requestRateLimitDoesNotShrinkSegments() async throws {
        try await withSink { sink, directory in
            try await Nginx.with(
                proxyingTo: sink.url, location: "limit_req zone=streamup; limit_req_status 429;",
                http: "limit_req_zone $binary_remote_addr zone=streamup:1m rate=20r/s;"
            ) { nginx in
                let input = lines(8_000)
                let child = try StreamupProcess(["--segment-bytes", "8k", nginx.url.absoluteString + "ingest"])
                child.write(input)
                child.closeStdin()
                #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
                #expect(streamText(in: directory) == input)
                #expect(!child.stderr.contains("429 (too many requests) twice"), "stderr: \(child.stderr)")
                // nginx's error page reads as its words in the line that says delivery is failing.
                #expect(child.stderr.contains("answered 429: 429 Too Many Requests nginx/"), "stderr: \(child.stderr)")
                #expect(nginx.accessLog.contains("\" 429 "), "the limit never refused a request: \(nginx.accessLog.suffix(500))")
            }
        }
    }

    /// `--single-request` through nginx, with its default `proxy_request_buffering on` (the
    /// whole chunked body is passed on once it ends) and with `off` (passed on as it comes).
    @Test(arguments: ["", "proxy_request_buffering off;"])
    func singleRequestPassesThroughNginx(buffering: String) async throws {
        try await withSink { sink, _ in
            try await Nginx.with(proxyingTo: sink.url, location: buffering) { nginx in
                let input = lines(2_000)
                let child = try StreamupProcess(["--single-request", nginx.url.absoluteString + "ingest"])
                child.write(input)
                child.closeStdin()
                #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
                let stored = try #require(sink.requests.last?.storedFile)
                #expect(try String(contentsOfFile: stored, encoding: .utf8) == input)
            }
        }
    }

    /// `--resumable` through nginx to a server that sends no `104 Upload Resumption Supported`
    /// (`streamup sink --no-104`): nginx 1.22 would hold a 104 until its `proxy_read_timeout`
    /// (60 s) and then pass it on as the final answer, so the creation never gets its 201.
    /// Without it: one upload, PATCHes, the stream whole.
    @Test func resumableThroughNginxToAServerWithout104() async throws {
        try await withSink(configure: { $0.sendsUploadResumptionSupported = false }) { sink, directory in
            try await Nginx.with(proxyingTo: sink.url) { nginx in
                let input = lines(2_000)
                let child = try StreamupProcess(["--resumable", nginx.url.absoluteString + "ingest"])
                child.write(input)
                child.closeStdin()
                #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
                #expect(streamText(in: directory) == input)
                #expect(sink.requests.filter { $0.method == "POST" }.count == 1)
                #expect(sink.requests.contains { $0.method == "PATCH" })
            }
        }
    }
}
