import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

/// What only a process left running for a long time shows: its memory must not grow with the
/// number of requests it has sent.
@Suite(.timeLimit(.minutes(3))) struct LongRunCommandTests {
    /// Peak memory stays flat over thousands of requests: `--segment-bytes 4KiB` on lines from
    /// a pipe that stays open, the peak resident set read after 1,000 requests and again after
    /// 5,000 more. Each answered request once stayed allocated (about 20 KB: its task and body,
    /// held by the answer's one-minute timer), 100 MB over these 5,000; a bare URLSession
    /// program grows about 1 MiB over as many.
    @Test func peakMemoryStaysFlatOverThousandsOfRequests() async throws {
        let line = "a line of log text that is about sixty bytes long, more or less.\n"
        let linesPerRequest = 4_096 / line.utf8.count
        let received = Locked(0)
        let sink = try SinkServer(configuration: SinkConfiguration()) { event in received.withLock { $0 += event.bodyByteCount } }
        sink.start()
        defer { sink.stop() }
        let child = try StreamupProcess(["--segment-bytes", "4KiB", sink.url.absoluteString])
        defer { child.signal(SIGKILL) }
        var sent = 0
        func send(requests: Int) async throws -> Int {
            let chunk = String(repeating: line, count: linesPerRequest * 100)
            for _ in 0..<(requests / 100) {
                child.write(chunk)
                sent += chunk.utf8.count
            }
            let expected = sent
            try #require(await eventually(within: .seconds(120)) { received.withLock { $0 } >= expected }, "\(received.withLock { $0 }) of \(expected) bytes")
            return try #require(peakResidentKiB(of: child.process.processIdentifier))
        }
        let afterFirst = try await send(requests: 1_000)
        let afterMore = try await send(requests: 5_000)
        child.closeStdin()
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        #expect(afterMore - afterFirst < 8 << 10, "peak memory grew from \(afterFirst) KiB to \(afterMore) KiB over 5,000 requests")
    }
}

/// The peak resident set (`VmHWM` in `/proc/PID/status`) of a running process, in KiB.
func peakResidentKiB(of pid: Int32) -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
        let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
    else { return nil }
    return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
}
