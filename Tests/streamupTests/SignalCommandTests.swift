import Foundation
import StreamUpTestSupport
import Testing

/// SIGINT/SIGTERM through the built binary: each signal says in one line what it does, the
/// second what was lost or where it is kept.
@Suite(.timeLimit(.minutes(2))) struct SignalCommandTests {
    /// Against a server that never answers: the first signal says how many bytes the stop
    /// still has to deliver; the second stops at once (130) and says they are lost or, with a
    /// spool, where they are kept. Counts are in words that agree with them ("1 byte").
    @Test(arguments: [
        ("line\n", false, "5 bytes", "5 bytes read were not delivered and are lost (--spool DIR keeps them for the next start)"),
        ("\n", false, "1 byte", "1 byte read was not delivered and is lost (--spool DIR keeps them for the next start)"),
        ("line\n", true, "5 bytes", "5 bytes the server did not acknowledge are kept in SPOOL; the next start with --spool SPOOL sends them first"),
    ])
    func eachSignalSaysWhatItDoes(input: String, spooled: Bool, held: String, lost: String) async throws {
        let scratch = try TemporaryDirectory()
        let spool = scratch.url.appendingPathComponent("spool").path
        let server = try StubHTTPServer(.stallUntilResumed)
        defer { server.stop() }
        let child = try StreamupProcess((spooled ? ["--spool", spool] : []) + [server.url])
        child.write(input)
        // Given a request that carries the input and is never answered,
        #expect(await eventually { server.isStalling })
        // the first signal says what the stop waits for,
        child.signal(SIGTERM)
        let first = "streamup: stopping (SIGTERM): delivering the \(held) still held, waiting at most 30s (a second SIGINT/SIGTERM stops at once)\n"
        #expect(await eventually { child.stderr.hasSuffix("\n") }, "no line after the first signal")
        #expect(child.stderr == first)
        // and the second what stopping at once leaves behind.
        child.signal(SIGINT)
        #expect(await child.waitForExit() == 130)
        #expect(child.stderr == first + "streamup: SIGINT again: stopped at once; \(lost.replacingOccurrences(of: "SPOOL", with: spool))\n")
    }
}

/// An input without a byte sends nothing (most receivers refuse an empty request) and ends
/// quietly with 0.
@Suite(.timeLimit(.minutes(2))) struct EmptyInputCommandTests {
    @Test func emptyStdinSendsNothingAndSaysNothing() async throws {
        try await withSink { sink, _ in
            let child = try StreamupProcess([sink.url.absoluteString])
            child.closeStdin()
            #expect(await child.waitForExit() == 0)
            #expect(child.stdout.isEmpty && child.stderr.isEmpty, "stdout: \(child.stdout) stderr: \(child.stderr)")
            #expect(sink.requests.isEmpty, "requests: \(sink.requests.map { "\($0.method) \($0.bodyByteCount) bytes" })")
        }
    }
}
