import Foundation
import StreamUp
import StreamUpSink
import StreamUpSystem
import StreamUpTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `streamup tail` through logrotate's `copytruncate` (copy the file, then truncate it in
/// place), done with the real `cp` and `truncate`: the copy is not sent again, even when the
/// patterns match it (a followed directory, `*.log*`), and a line the file had not sent when it
/// was truncated is sent from the copy. Every line once, each file's lines in order.
@Suite(.timeLimit(.minutes(3))) struct TailCopyTruncateTests {
    /// README's directory example: the copies (`app.log.1`, renamed to `app.log.2` at the next
    /// rotation) are in the followed directory. Three rotations while a writer appends: no line
    /// arrives twice, and every line that any of the files holds in the end arrives (a line
    /// written between the copy and the truncation is in neither: it can arrive only if it was
    /// read before the truncation).
    @Test func aFollowedDirectoryDoesNotSendTheCopiesAgain() async throws {
        let scratch = try TailScratch(logs: "nginx")
        let log = scratch.logs + "/app.log"
        let writer = try LineWriter(path: log, name: "app")
        try await withSink { sink, stored in
            let child = try StreamupProcess(scratch.tail(["-v"], "/", to: sink.url))
            #expect(await eventually { child.stderr.contains("following \(log) from its start") }, "stderr: \(child.stderr)")
            writer.start()
            for rotation in 0..<3 {
                #expect(await eventually { writer.written >= 150 * (rotation + 1) })
                try copytruncate(log)
            }
            #expect(await eventually { writer.written >= 600 })
            writer.stop()
            let held = try linesHeld(by: [log, log + ".1", log + ".2"])
            #expect(await eventually { Set(storedLines(in: stored, sink)["app"] ?? []).isSuperset(of: held) }, "stderr: \(child.stderr)")
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let lines = storedLines(in: stored, sink)["app"] ?? []
            #expect(lines.count == Set(lines).count, "\(lines.count - Set(lines).count) lines arrived twice")
            let inOrder = writer.lines.filter(Set(lines).contains)
            let firstOutOfOrder = zip(lines, inOrder).enumerated().first { $0.element.0 != $0.element.1 }
            #expect(
                firstOutOfOrder == nil,
                "not in the order written from line \(firstOutOfOrder?.offset ?? 0): \(lines.dropFirst(max(0, (firstOutOfOrder?.offset ?? 0) - 2)).prefix(6)); stderr: \(child.stderr)"
            )
            #expect(Set(held).subtracting(lines).isEmpty, "lost: \(Set(held).subtracting(lines).sorted().prefix(5))")
        }
    }

    /// 20 files written together, and one of them copied and truncated right after its last
    /// line, before streamup has read it (streamup is stopped with SIGSTOP meanwhile): that line
    /// arrives, from the copy (`f05.log.1`, which `*.log` does not match).
    @Test func theLineNotReadBeforeTheTruncationIsSentFromTheCopy() async throws {
        let scratch = try TailScratch()
        var files = ManyFiles(directory: scratch.logs, count: 20)
        try files.appendToAll()
        try await withSink { sink, stored in
            let child = try StreamupProcess(scratch.tail(to: sink.url))
            for _ in 0..<3 { try files.appendToAll() }
            try await files.expectStored(in: stored, child)
            try files.copytruncateUnread("f05", while: child)
            try await files.expectStored(in: stored, child)
            await files.expectStoredAfterStopping(child, in: stored, sink)
        }
    }

    /// A glob that matches the copies (`*.log*`), with `--state`: two copytruncates (the second
    /// after logrotate's rename of `.1` to `.2`), each with a line written just before the copy
    /// and not read yet; then a restart with the same state. Every line once, none from a copy
    /// twice, the copies not read again after the restart.
    @Test func aGlobMatchingTheCopiesWithStateSendsEveryLineOnce() async throws {
        let scratch = try TailScratch()
        var files = ManyFiles(directory: scratch.logs, count: 3)
        try files.appendToAll()
        try await withSink { sink, stored in
            let arguments = scratch.tail(["-v", "--state", scratch.state], "/*.log*", to: sink.url)
            let first = try StreamupProcess(arguments)
            for _ in 0..<2 {
                try files.appendToAll()
                try await files.expectStored(in: stored, first)
                try files.copytruncateUnread("f01", while: first)
                try await files.expectStored(in: stored, first)
            }
            await files.expectStoredAfterStopping(first, in: stored, sink)
            let second = try StreamupProcess(arguments)
            try files.appendToAll()
            let expected = files.expected
            #expect(await eventually { storedLines(in: stored, sink) == expected }, "stderr: \(second.stderr)")
            await files.expectStoredAfterStopping(second, in: stored, sink)
        }
    }

    /// A copytruncate while streamup is stopped, with `--state`: the line the file had not sent
    /// is sent from the copy after the restart, and the copy (which `*.log*` matches) is not
    /// sent again from its start.
    @Test func aCopytruncateWhileStoppedIsTakenUpAfterTheRestart() async throws {
        let scratch = try TailScratch()
        var files = ManyFiles(directory: scratch.logs, count: 3)
        try files.appendToAll()
        try await withSink { sink, stored in
            let arguments = scratch.tail(["-v", "--state", scratch.state], "/*.log*", to: sink.url)
            let first = try StreamupProcess(arguments)
            try files.appendToAll()
            try await files.expectStored(in: stored, first)
            await files.expectStoredAfterStopping(first, in: stored, sink)
            try files.appendToAll()
            try copytruncate(files.path("f01"))
            try files.appendToAll()
            let second = try StreamupProcess(arguments)
            let expected = files.expected
            #expect(await eventually { storedLines(in: stored, sink) == expected }, "stderr: \(second.stderr)")
            await files.expectStoredAfterStopping(second, in: stored, sink)
        }
    }
}

// MARK: - Support

/// The lines the files at `paths` hold (those that exist).
private func linesHeld(by paths: [String]) throws -> Set<String> {
    var lines: Set<String> = []
    for path in paths where FileManager.default.fileExists(atPath: path) {
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") { lines.insert(String(line)) }
    }
    return lines
}

/// A thread appending numbered lines to one file (`NAME line N`, opened with `O_APPEND` each
/// time, so a truncation is followed as a program writing in append mode follows it), until
/// stopped; it remembers what it wrote.
///
/// Thread safety: `state` is guarded by a mutex; the thread is the only writer of the file.
private final class LineWriter: Sendable {
    private struct State {
        var running = true
        var stopped = false
        var lines: [String] = []
    }
    private let state = Mutex(State())
    private let path: String
    private let name: String

    init(path: String, name: String) throws {
        self.path = path
        self.name = name
        try append("", to: path, creating: true)
    }

    func start() {
        Thread.detachNewThread { [self] in
            var number = 0
            while state.withLock({ $0.running }) {
                let line = "\(name) line \(number) " + String(repeating: "x", count: number % 40)
                try? append(line + "\n", to: path, creating: true)
                state.withLock { $0.lines.append(line) }
                number += 1
                usleep(1000)  // pacing of the writer (about 1,000 lines/s), not a wait for anything
            }
            state.withLock { $0.stopped = true }
        }
    }

    var written: Int { state.withLock { $0.lines.count } }
    var lines: [String] { state.withLock { $0.lines } }

    /// Stops the writer and waits until its thread is done.
    func stop() {
        guard
            state.withLock({ state in
                defer { state.running = false }
                return state.running
            })
        else { return }
        if !eventually({ state.withLock { $0.stopped } }) { Issue.record("the writer thread did not stop") }
    }
}
