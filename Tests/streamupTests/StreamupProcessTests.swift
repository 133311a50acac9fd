import Foundation
import StreamUpTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A test that fails must not leave its children running: the built binary, and what it
/// started, end when the test lets go of them, on every path.
@Suite(.timeLimit(.minutes(2))) struct StreamupProcessTests {
    private struct ExpectationFailed: Error {}

    /// Given `streamup --retries forever` against a port where nothing listens, and a test that
    /// throws before it ends the child, the child is gone once the test lets go of it.
    @Test func aThrowingTestEndsItsChild() async throws {
        var pid: Int32 = 0
        do {
            let child = try StreamupProcess(["--retries", "forever", "http://127.0.0.1:\(unusedLocalPort())/ingest"])
            pid = child.process.processIdentifier
            child.write("held\n")
            throw ExpectationFailed()
        } catch is ExpectationFailed {}
        #expect(!processRuns(pid), "streamup \(pid) still runs after its test ended")
        if processRuns(pid) { kill(pid, SIGKILL) }
    }

    /// `heartbeat -- COMMAND`'s command goes with it (its process group).
    @Test func aThrowingTestEndsTheJobItsChildStarted() async throws {
        var jobPID: Int32 = 0
        do {
            let child = try StreamupProcess([
                "heartbeat", "--every", "1h", "http://127.0.0.1:\(unusedLocalPort())/beats", "--", "sh", "-c", "echo $$; exec sleep 600",
            ])
            let line = try #require(await child.firstLine())
            jobPID = try #require(Int32(line))
            throw ExpectationFailed()
        } catch is ExpectationFailed {}
        // Killed with streamup, the job is reaped by whoever inherits it: that takes a moment.
        #expect(jobPID > 0)
        #expect(await eventually { !processRuns(jobPID) }, "the job \(jobPID) still runs after its test ended")
        if jobPID > 0 && processRuns(jobPID) { kill(jobPID, SIGKILL) }
    }

    /// A wait that times out kills the child (even one that would take its time over SIGTERM).
    @Test func aWaitThatTimesOutEndsTheChild() async throws {
        let child = try StreamupProcess(["--retries", "forever", "http://127.0.0.1:\(unusedLocalPort())/ingest"])
        child.write("held\n")
        #expect(await child.waitForExit(timeout: 1) == nil)
        #expect(!child.process.isRunning)
    }
}

/// Whether a process with this id still runs (a zombie has ended: its parent, or whoever
/// inherited it, has yet to reap it).
func processRuns(_ pid: Int32) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let state = stat.split(separator: ")").last?.split(separator: " ").first
    else { return false }
    return state != "Z"
}
