import Foundation
import StreamUpTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `streamup tail` given only paths that are there but cannot be read ends at start with the
/// reason (exit 74), instead of waiting forever for nothing.
@Suite(.timeLimit(.minutes(2))) struct TailStartCommandTests {
    /// A log only root may read, followed as `nobody` (through `setpriv`: root reads anything).
    @Test(.enabled(if: StreamupProcess.canRunAsNobody, "needs root and setpriv"))
    func unreadableFileEndsWithThePermissionProblem() async throws {
        let scratch = try TailScratch()
        let log = scratch.logs + "/secure.log"
        try "secret\n".write(toFile: log, atomically: false, encoding: .utf8)
        for path in [scratch.directory.path, scratch.logs] { chmod(path, 0o755) }
        chmod(log, 0o600)
        try await withSink { sink, _ in
            let child = try StreamupProcess.asNobody(["tail", log, sink.url.absoluteString])
            #expect(await child.waitForExit(timeout: 20) == 74, "stderr: \(child.stderr)")
            #expect(child.stderr == "streamup: tail: nothing can be followed: \(log): Permission denied\n")
            #expect(sink.requests.isEmpty)
        }
    }

    /// Something that is not a regular file (a device) is no log to follow either.
    @Test func deviceEndsWithTheReason() async throws {
        try await withSink { sink, _ in
            let child = try StreamupProcess(["tail", "/dev/null", sink.url.absoluteString])
            #expect(await child.waitForExit(timeout: 20) == 74, "stderr: \(child.stderr)")
            #expect(child.stderr == "streamup: tail: nothing can be followed: /dev/null: not a regular file\n")
        }
    }

    /// One readable path among unreadable ones is followed as before.
    @Test func oneReadableFileIsEnough() async throws {
        let scratch = try TailScratch()
        let log = scratch.logs + "/app.log"
        try "one\n".write(toFile: log, atomically: false, encoding: .utf8)
        try await withSink { sink, directory in
            let child = try StreamupProcess(scratch.tail([], "/app.log", to: sink.url).dropLast() + ["/dev/null", sink.url.absoluteString])
            #expect(await eventually { streamText(in: directory) == "one\n" }, "stderr: \(child.stderr)")
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        }
    }
}
