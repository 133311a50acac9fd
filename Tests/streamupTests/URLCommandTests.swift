import Foundation
import StreamUpTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// URLs as people type them, through the built binary: IPv6 literals, any-case schemes, and
/// ports out of range as usage errors.
@Suite(.timeLimit(.minutes(2))) struct URLCommandTests {
    /// `streamup sink --host ::1` and `streamup http://[::1]:PORT/` work together (they used to
    /// fail with `URLError -1000`, as did every IPv6 literal).
    @Test(.enabled(if: ipv6LoopbackAvailable)) func uploadReachesASinkOnTheIPv6Loopback() async throws {
        let sink = try StreamupProcess(["sink", "--host", "::1", "--port", "0"])
        defer { sink.signal(SIGTERM) }
        #expect(await eventually { sink.stdout.contains("\n") })
        let origin = try #require(sink.stdout.split(separator: "\n").first?.split(separator: " ").last.map(String.init))
        #expect(origin.hasPrefix("http://[::1]:"))
        let child = try StreamupProcess([origin + "/six"])
        child.write("over IPv6\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        #expect(await eventually { sink.stdout.contains("POST /six 10 ") }, "sink: \(sink.stdout)")
    }

    /// An IPv6 address in a message keeps its brackets.
    @Test func refusedIPv6ConnectionNamesTheAddressWithBrackets() async throws {
        let port = unusedLocalPort()
        let child = try StreamupProcess(["--retries", "0", "http://[::1]:\(port)/"])
        child.write("a line to send\n")  // an empty input sends nothing, so it would meet no refusal
        child.closeStdin()
        #expect(await child.waitForExit() == 2)
        #expect(child.stderr.hasPrefix("streamup: connection refused by [::1]:\(port)"), "stderr: \(child.stderr)")
    }

    /// `HTTP://` is http (it used to fail as an unsupported URL, `URLError -1002`).
    @Test func upperCaseSchemeWorks() async throws {
        try await withSink { sink, _ in
            let child = try StreamupProcess(["HTTP://127.0.0.1:\(sink.port)/upper"])
            child.write("x\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(sink.requests.last?.path == "/upper")
        }
    }

    /// A port out of range is a usage error naming the URL (it used to exit 2 with
    /// `NSURLErrorDomain error -1000`).
    @Test func portOutOfRangeIsAUsageError() async throws {
        let child = try StreamupProcess(["http://127.0.0.1:99999/"])
        child.closeStdin()
        #expect(await child.waitForExit() == 64)
        #expect(child.stderr == "streamup: 'http://127.0.0.1:99999/': port 99999 is out of range (1-65535)\n")
    }

    /// A ':' with no port after it is a usage error (it was taken as port 80 and retried for ever).
    @Test func anEmptyPortIsAUsageError() async throws {
        let child = try StreamupProcess(["http://127.0.0.1:/ingest"])
        child.closeStdin()
        #expect(await child.waitForExit() == 64)
        #expect(
            child.stderr
                == "streamup: 'http://127.0.0.1:/ingest': the port after '127.0.0.1:' is empty (write the port, or leave out the ':' for http's default)\n")
    }
}
