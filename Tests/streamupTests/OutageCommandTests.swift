import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A receiver that is down for longer than a fixed number of retries would last, with the
/// default flags: the built binary waits it out, says so on stderr (when it starts failing,
/// about once a minute while it goes on, when it recovers), and every line arrives once.
///
/// Long set (a real minute): `DeliveryMachineTests.anOutageOfAnyLengthIsRiddenOutAndReportedAboutOnceAMinute`
/// shows the same on the manual clock.
@Suite(.long, .timeLimit(.minutes(5))) struct OutageCommandTests {
    /// Nothing listens on the port at first; a sink starts on that same port after the outage
    /// has gone on for over a minute (longer than the ten retries the default used to make).
    @Test func theDefaultRidesOutAnOutageAndEveryLineArrivesOnce() async throws {
        let scratch = try TemporaryDirectory()
        let port = unusedLocalPort()
        let child = try StreamupProcess(["--segment-seconds", "200ms", "http://127.0.0.1:\(port)/ingest"])
        // The child ends on every path: a failed expectation leaves nothing running.
        defer { if !child.hasExited { child.signal(SIGKILL) } }
        var expected = ""
        for index in 0..<5 {
            let line = "during the outage \(index)\n"
            child.write(line)
            expected += line
        }
        // Given the receiver down: one line when delivery starts failing...
        #expect(await eventually { child.stderr.contains("delivery is failing: ") }, "stderr: \(child.stderr)")
        // ...and, a minute on, one that says how long and how much is held (the backoff is
        // at most 30 s, so that line comes within 90 s).
        #expect(
            await eventually(within: .seconds(120)) { child.stderr.contains("delivery has been failing for 1 min") },
            "stderr: \(child.stderr)")
        #expect(!child.hasExited, "stderr: \(child.stderr)")
        #expect(child.stderr.contains("\(expected.utf8.count) bytes held in memory, still retrying"), "stderr: \(child.stderr)")

        // When a receiver listens on that port, what was held and what comes next arrive, once.
        let sink = try startedSink(port: port, storingIn: scratch.url)
        defer { sink.stop() }
        #expect(await eventually(within: .seconds(60)) { streamText(in: scratch.url) == expected }, "stderr: \(child.stderr)")
        child.write("after\n")
        expected += "after\n"
        child.closeStdin()
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        #expect(streamText(in: scratch.url) == expected)
        // Once: the requests the sink stored carried each byte one time.
        #expect(sink.requests.filter { $0.status == 200 }.map(\.bodyByteCount).reduce(0, +) == expected.utf8.count)
        let lines = child.stderr.split(separator: "\n")
        #expect(lines.filter { $0.contains("delivery is failing: ") }.count == 1, "stderr: \(child.stderr)")
        #expect(lines.filter { $0.contains("delivery recovered after ") }.count == 1, "stderr: \(child.stderr)")
    }
}
