import Foundation
import StreamUpTestSupport
import Testing

@testable import streamup

#if canImport(Glibc)
import Glibc
#endif

/// `streamup heartbeat URL -- COMMAND` as a cron wrapper, run as the built binary: the job's
/// output and exit status are the job's, with the monitor up or down.
@Suite(.timeLimit(.minutes(2))) struct HeartbeatJobTests {
    /// A job that writes bytes that are not text and no final newline on stdout, a line on
    /// stderr, and exits with `status`.
    private static func job(exiting status: Int) -> [String] {
        ["sh", "-c", #"printf 'report line\n\377\000tail without newline'; printf 'job warning\n' >&2; exit "$0""#, "\(status)"]
    }
    private static let jobStdout = Data("report line\n".utf8) + Data([0xFF, 0x00]) + Data("tail without newline".utf8)

    /// Monitor up (it answers every request with a body): stdout is the job's, byte for
    /// byte, without the monitor's answer; stderr is the job's; the status is the job's.
    @Test(arguments: [0, 3])
    func monitorUpLeavesTheJobsOutputAndStatus(status: Int) async throws {
        let monitor = try StubHTTPServer(.answerAfterBody(status: 200, body: #"{"monitor":"ok"}"#))
        defer { monitor.stop() }
        let child = try StreamupProcess(["heartbeat", "--every", "50ms", monitor.url, "--"] + Self.job(exiting: status))
        #expect(await child.waitForExit() == Int32(status), "stderr: \(child.stderr)")
        #expect(child.stdoutData == Self.jobStdout)
        #expect(child.stderr == "job warning\n")
        #expect(!monitor.receivedHeads.isEmpty, "no beat reached the monitor")
    }

    /// Monitor down (nothing listens): the job's output and status still, and the delivery
    /// trouble as one line on stderr, soon after the job ended rather than once retries run out
    /// (the test's wait is shorter than the retries).
    @Test(arguments: [0, 3])
    func monitorDownLeavesTheJobsOutputAndStatusAndSaysSoOnce(status: Int) async throws {
        let child = try StreamupProcess(["heartbeat", "--every", "50ms", "http://127.0.0.1:\(unusedLocalPort())/beats", "--"] + Self.job(exiting: status))
        #expect(await child.waitForExit(timeout: 30) == Int32(status), "stderr: \(child.stderr)")
        #expect(child.stdoutData == Self.jobStdout)
        let lines = child.stderr.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.filter { $0 != "job warning" }.count == 1, "stderr: \(child.stderr)")
        let trouble = try #require(lines.first { $0.hasPrefix("streamup: ") })
        #expect(trouble.hasPrefix("streamup: heartbeat: the beats were not all delivered: "))
        #expect(trouble.contains("connection refused"))
        #expect(trouble.contains("of the command's end (--shutdown-timeout)"))
    }

    /// The monitor refuses the beats (404): one line, and the job's status still.
    @Test func monitorRefusingTheBeatsLeavesTheJobsStatus() async throws {
        let monitor = try StubHTTPServer(.answerAfterBody(status: 404, body: "no such check"))
        defer { monitor.stop() }
        let child = try StreamupProcess(["heartbeat", monitor.url, "--"] + Self.job(exiting: 0))
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        #expect(child.stdoutData == Self.jobStdout)
        #expect(child.stderr == "job warning\nstreamup: heartbeat: the beats were not delivered: server answered 404 Not Found: no such check\n")
    }

    /// The job runs with the signal dispositions a shell gives it: a pipe whose reader has
    /// gone ends the writer quietly (streamup itself ignores SIGPIPE; the job must not inherit it).
    @Test func jobDoesNotInheritAnIgnoredSIGPIPE() async throws {
        try await withSink { sink, _ in
            let child = try StreamupProcess(["heartbeat", sink.url.absoluteString, "--", "sh", "-c", "yes | head -n 1"])
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(child.stdout == "y\n")
            #expect(child.stderr.isEmpty, "stderr: \(child.stderr)")
        }
    }

    /// SIGHUP (a closed ssh session) goes to the job too: the job ends by it (129, as a shell
    /// says), and its end is reported to the monitor as an exit beat.
    @Test func hangUpIsPassedOnToTheJobAndItsExitReported() async throws {
        try await withSink(configure: { $0.keepBodiesInMemory = true }) { sink, _ in
            let child = try StreamupProcess([
                "heartbeat", "--every", "1h", sink.url.absoluteString, "--", "sh", "-c", "echo ready; while :; do sleep 0.05; done",
            ])
            #expect(await child.firstLine() == "ready")
            child.signal(SIGHUP)
            #expect(await child.waitForExit() == 129, "stderr: \(child.stderr)")
            #expect(
                child.stderr == "streamup: stopping (SIGHUP): passed on to the command, whose end ends the beats (a second SIGINT/SIGTERM stops at once)\n")
            let beats = sink.requests.compactMap { $0.body.map { String(decoding: $0, as: UTF8.self) } }.joined()
            #expect(beats.contains(#""event":"exit""#) && beats.contains(#""exit_status":129"#), "beats: \(beats)")
        }
    }

    /// A second signal stops at once, and kills the job (and what it started) first: it never
    /// runs on orphaned, with nobody to report its end.
    @Test func stoppingAtOnceKillsTheJob() async throws {
        try await withSink { sink, _ in
            let child = try StreamupProcess([
                "heartbeat", "--every", "1h", sink.url.absoluteString, "--",
                "sh", "-c", #"trap '' TERM INT; sleep 600 & echo "$$ $!"; wait"#,
            ])
            let pids = try #require(await child.firstLine()).split(separator: " ").compactMap { Int32($0) }
            #expect(pids.count == 2)
            child.signal(SIGTERM)
            #expect(await eventually { child.stderr.hasSuffix("\n") }, "no line after SIGTERM")
            child.signal(SIGINT)
            #expect(await child.waitForExit() == 130, "stderr: \(child.stderr)")
            #expect(child.stderr.contains("streamup: SIGINT again: stopped at once; the command was killed; "), "stderr: \(child.stderr)")
            for pid in pids {
                #expect(await eventually { !processRuns(pid) }, "job process \(pid) still runs")
                if processRuns(pid) { kill(pid, SIGKILL) }
            }
        }
    }

    /// SIGTERM goes to the job, with one line saying so; the job's own handling decides the
    /// status and its output is kept.
    @Test func signalIsPassedOnToTheJob() async throws {
        try await withSink { sink, _ in
            let child = try StreamupProcess([
                "heartbeat", "--every", "50ms", sink.url.absoluteString, "--",
                "sh", "-c", #"trap 'echo job stopped; exit 7' TERM; echo ready; while :; do sleep 0.05; done"#,
            ])
            #expect(await child.firstLine() == "ready")
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 7, "stderr: \(child.stderr)")
            #expect(child.stdout == "ready\njob stopped\n")
            #expect(
                child.stderr == "streamup: stopping (SIGTERM): passed on to the command, whose end ends the beats (a second SIGINT/SIGTERM stops at once)\n")
        }
    }

    /// A command that cannot be run ends with 127 and env's one line, as a shell would.
    @Test func commandThatCannotRunEndsWith127() async throws {
        try await withSink { sink, _ in
            let child = try StreamupProcess(["heartbeat", "--every", "1h", sink.url.absoluteString, "--", "streamup-test-no-such-command"])
            #expect(await child.waitForExit() == 127, "stderr: \(child.stderr)")
            // The quotes around the name follow the locale.
            let plain = child.stderr.replacingOccurrences(of: "‘", with: "'").replacingOccurrences(of: "’", with: "'")
            #expect(plain == "/usr/bin/env: 'streamup-test-no-such-command': No such file or directory\n", "stderr: \(child.stderr)")
        }
    }

    /// streamup killed outright (`kill -9`, the OOM killer) takes the job with it: the job gets
    /// SIGTERM and does not run on orphaned, with nobody to report its end.
    @Test func killedOutrightItTakesTheJobWithIt() async throws {
        try await withSink { sink, _ in
            let child = try StreamupProcess([
                "heartbeat", "--every", "1h", sink.url.absoluteString, "--", "sh", "-c", #"echo "$$"; exec sleep 300"#,
            ])
            let job = try #require(await child.firstLine().flatMap { Int32($0) })
            defer { kill(job, SIGKILL) }
            child.signal(SIGKILL)
            #expect(await eventually(within: .seconds(10)) { !processRuns(job) }, "the job \(job) runs on without streamup")
        }
    }

    /// A long job is not stopped while streamup lives: the thread that started it (the death
    /// signal follows that thread, not the process) outlives the task pool's threads, which
    /// end after about 5 idle seconds.
    @Test func jobOutlastingIdleThreadsRunsToItsEnd() async throws {
        try await withSink { sink, _ in
            let child = try StreamupProcess(["heartbeat", "--every", "1h", sink.url.absoluteString, "--", "sh", "-c", "sleep 8; echo done"])
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(child.stdout == "done\n")
        }
    }

    /// A streamup that has ended between starting the job and the job asking for the death
    /// signal (which would then never come) leaves no job: the shim, seeing another parent,
    /// ends before the command runs.
    @Test func jobIsNotRunWhenStreamupHasAlreadyEnded() async throws {
        let child = try StreamupProcess([ExecShim.marker, String(Int32.max), "sh", "-c", "echo ran"])
        #expect(await child.waitForExit() == 143, "stderr: \(child.stderr)")
        #expect(child.stdout.isEmpty)
    }
}
