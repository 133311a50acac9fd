import Foundation
import StreamUpTestSupport
import Testing

/// Connections that end without an answer, through the built binary: one line that says what
/// happened and what to do (it used to be libcurl's text and a URLError code).
@Suite(.timeLimit(.minutes(2))) struct TransportFailureCommandTests {
    /// A server (or a proxy's idle timeout) closes the connection while a single request's body
    /// is open: the next bytes meet a broken pipe (it printed `Send failure: Broken pipe
    /// (URLError -1)`).
    @Test func closedMidBodyIsExplained() async throws {
        let server = try StubHTTPServer(.closeAfterHead)
        defer { server.stop() }
        let child = try StreamupProcess(["--single-request", server.url])
        // Given the server has taken the request head and closed the connection,
        #expect(await eventually { server.closedConnections == 1 })
        // when more lines come, the next ones meet the closed connection.
        let writer = Task.detached {
            for index in 0..<400 where child.process.isRunning {
                child.write("line \(index)\n")
                try? await Task.sleep(for: .milliseconds(50))  // the scenario: a log line every 50 ms
            }
            child.closeStdin()
        }
        #expect(await child.waitForExit() == 2)
        writer.cancel()
        #expect(
            child.stderr
                == "streamup: 127.0.0.1:\(server.port) closed the connection while the body was being sent, without answering (Broken pipe): often a server's or proxy's limit on long or idle request bodies; send shorter requests (segmented delivery) or raise that limit\n"
        )
    }

    /// A server that reads the whole body and closes without answering (it printed `Empty reply
    /// from server (URLError -1011)`).
    @Test func closedWithoutAnAnswerIsExplained() async throws {
        let server = try StubHTTPServer(.closeWithoutAnswer)
        defer { server.stop() }
        let child = try StreamupProcess(["--single-request", server.url])
        child.write("data\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 2)
        #expect(
            child.stderr
                == "streamup: 127.0.0.1:\(server.port) closed the connection without answering: the server or a proxy in front of it dropped the request; check its logs, and that the port speaks plain HTTP (https:// if it expects TLS)\n"
        )
    }

    /// A server that answered earlier segments and then closes without answering (a receiver
    /// out of memory) speaks HTTP on that port: the line does not point at the scheme.
    @Test func aServerThatAnsweredBeforeIsNotToldToCheckTheScheme() async throws {
        let server = try StubHTTPServer(.answerThenCloseWithoutAnswer(answering: 1))
        defer { server.stop() }
        let child = try StreamupProcess(["--segment-seconds", "100ms", server.url])
        defer { if !child.hasExited { child.signal(SIGKILL) } }
        child.write("first\n")
        #expect(await eventually { server.receivedHeads.count == 1 })
        child.write("second\n")
        #expect(await eventually { child.stderr.contains("delivery is failing") }, "stderr: \(child.stderr)")
        child.signal(SIGKILL)
        #expect(
            child.stderr.contains(
                "127.0.0.1:\(server.port) closed the connection without answering, though it answered earlier requests: the server or a proxy in front of it dropped this one (a limit on request bodies or memory, a restart); check its logs"
            ), "stderr: \(child.stderr)")
        #expect(!child.stderr.contains("https://"), "stderr: \(child.stderr)")
    }
}
