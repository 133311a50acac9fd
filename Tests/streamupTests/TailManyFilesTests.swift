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

/// `streamup tail PATTERN…` as a user runs it: the built binary following many files into the
/// sink, which merges each stream by `Streamup-Stream-Id`. Every test checks the exact lines
/// stored: each once, and each file's lines in that file's order.
@Suite(.timeLimit(.minutes(3))) struct TailManyFilesTests {
    /// A glob over 20 files with lines appended to all of them; a file created after start; a
    /// rename rotation in one (a line still written to the old file, then the new one), a
    /// copytruncate in another, a file deleted right after its last line.
    @Test func aGlobOverTwentyFilesDeliversEveryLineOnceInOrder() async throws {
        let scratch = try TailScratch()
        var files = ManyFiles(directory: scratch.logs, count: 20)
        try files.appendToAll()  // what is there before start (sent: --from-start)
        try await withSink { sink, stored in
            let child = try StreamupProcess(scratch.tail(to: sink.url))
            for _ in 0..<3 { try files.appendToAll() }
            try await files.expectStored(in: stored, child)

            // A file created after start: read from its start.
            try files.append("f20", lines: 2)
            // Rename rotation in f03: the old file gets one more line, then the new file lines.
            try FileManager.default.moveItem(atPath: files.path("f03"), toPath: files.path("f03") + ".1")
            try files.append("f03", lines: 1, at: files.path("f03") + ".1")
            try files.append("f03", lines: 2)
            // copytruncate in f05, once what it holds has arrived.
            try await files.expectStored(in: stored, child)
            let f05 = files.path("f05")
            try FileManager.default.copyItem(atPath: f05, toPath: f05 + ".1")
            try FileHandle(forWritingAtPath: f05).map {
                try $0.truncate(atOffset: 0)
                try $0.close()
            }
            try files.append("f05", lines: 2)
            // f07 deleted right after its last line.
            try files.append("f07", lines: 1)
            try FileManager.default.removeItem(atPath: files.path("f07"))
            files.retire("f07")
            for _ in 0..<2 { try files.appendToAll() }
            try await files.expectStored(in: stored, child)
            await files.expectStoredAfterStopping(child, in: stored, sink)
        }
    }

    /// `kill -9` while all 20 files grow, and a restart with the same `--state` and `--spool`:
    /// every line arrives once, in each file's order.
    @Test func killAndRestartWithStateAndSpoolWhileTwentyFilesGrow() async throws {
        let scratch = try TailScratch()
        let writer = try GrowingFiles(directory: scratch.logs, count: 20)
        try await withSink { sink, stored in
            let arguments = scratch.tail(["--state", scratch.state, "--spool", scratch.spool, "--retries", "forever"], to: sink.url)
            writer.start()
            let first = try StreamupProcess(arguments)
            // Given lines arriving from every file,
            #expect(await eventually { storedLines(in: stored, sink).values.reduce(0) { $0 + $1.count } >= 400 })
            // when streamup is killed outright while the files keep growing,
            first.signal(SIGKILL)
            _ = await first.waitForExit()
            let atKill = writer.written
            #expect(await eventually { writer.written >= atKill + 200 })
            // and started again with the same state and spool,
            let second = try StreamupProcess(arguments)
            #expect(await eventually { storedLines(in: stored, sink).values.reduce(0) { $0 + $1.count } >= atKill + 400 })
            writer.stop()
            let expected = writer.expected
            // then every line is there once, in order.
            #expect(await eventually(within: .seconds(60)) { storedLines(in: stored, sink) == expected })
            second.signal(SIGTERM)
            #expect(await second.waitForExit() == 0, "stderr: \(second.stderr)")
            let lines = storedLines(in: stored, sink)
            for (file, wanted) in expected where lines[file] != wanted {
                Issue.record(
                    "\(file): stored \(lines[file]?.count ?? 0) lines, expected \(wanted.count); first difference at line \(Array(zip(lines[file] ?? [], wanted)).firstIndex { $0 != $1 } ?? -1)"
                )
            }
        }
    }

    /// A pattern whose directory does not exist and one that matches nothing are each said
    /// once on stderr; when the directory and a file appear, its lines arrive.
    @Test func missingDirectoryAndNoMatchAreSaidOnce() async throws {
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        let missing = work.appendingPathComponent("not-yet/app").path
        let empty = work.appendingPathComponent("empty").path
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        try await withSink { sink, stored in
            let child = try StreamupProcess(["tail", missing + "/*.log", empty + "/*.log", sink.url.absoluteString])
            let missingLine = "streamup: the directory \(missing) does not exist (yet); waiting for it to appear"
            let noMatchLine = "streamup: waiting for \(empty)/*.log: no file matches it yet"
            #expect(await eventually { child.stderr.contains(missingLine) && child.stderr.contains(noMatchLine) }, "stderr: \(child.stderr)")
            try FileManager.default.createDirectory(atPath: missing, withIntermediateDirectories: true)
            try "first line\n".write(toFile: missing + "/app.log", atomically: false, encoding: .utf8)
            #expect(await eventually { streamText(in: stored) == "first line\n" })
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let lines = child.stderr.split(separator: "\n").map(String.init)
            #expect(lines.filter { $0 == missingLine }.count == 1)
            #expect(lines.filter { $0 == noMatchLine }.count == 1)
        }
    }

    /// A file that cannot be opened (permission denied) is skipped with one line on stderr; the
    /// other files go on, and it is followed once its permissions allow. Tests run as root, whom permissions do not stop: the child runs as
    /// root without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (`setpriv`), so a mode-000 file
    /// truly fails to open with EACCES (and the others, owned by root, open as usual).
    @Test func permissionDeniedSkipsOnlyThatFile() async throws {
        let scratch = try TailScratch()
        let logs = scratch.logs
        for name in ["a", "secret", "c"] { try "\(name) 0\n".write(toFile: "\(logs)/\(name).log", atomically: false, encoding: .utf8) }
        #expect(chmod("\(logs)/secret.log", 0) == 0)
        try await withSink { sink, stored in
            let child = try unprivilegedStreamup(scratch.tail(to: sink.url))
            let skipped = "streamup: cannot read \(logs)/secret.log: Permission denied; skipping it (the other files go on)"
            #expect(await eventually { child.stderr.contains(skipped) }, "stderr: \(child.stderr)")
            #expect(await eventually { Set(streamText(in: stored)?.split(separator: "\n") ?? []) == ["a 0", "c 0"] })
            try append("a 1\n", to: "\(logs)/a.log")
            try append("c 1\n", to: "\(logs)/c.log")
            try append("secret 1\n", to: "\(logs)/secret.log")
            #expect(await eventually { streamText(in: stored)?.split(separator: "\n").count == 4 })
            #expect(storedLines(in: stored, sink) == ["a": ["a 0", "a 1"], "c": ["c 0", "c 1"]])
            // Once it can be read (the chmod is an event on its directory), it is followed
            // from its start, like a file that appeared.
            #expect(chmod("\(logs)/secret.log", 0o644) == 0)
            #expect(await eventually { storedLines(in: stored, sink)["secret"] == ["secret 0", "secret 1"] })
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(storedLines(in: stored, sink) == ["a": ["a 0", "a 1"], "c": ["c 0", "c 1"], "secret": ["secret 0", "secret 1"]])
            #expect(child.stderr.components(separatedBy: skipped).count == 2, "said once")
        }
    }
}

extension TailManyFilesTests {
    /// With `--forget-after`, the state keeps a deleted file's position, marked gone, and
    /// drops it once it has been gone that long (at the next save after that). Long set:
    /// `SourceStateStoreTests.goneSourcesAreForgottenAfterTheirTime` shows it on a set clock.
    @Test(.long) func forgetAfterDropsTheStateOfAFileGoneThatLong() async throws {
        let scratch = try TailScratch()
        let (logs, state) = (scratch.logs, scratch.state)
        for name in ["kept", "gone"] { try "\(name) 0\n".write(toFile: "\(logs)/\(name).log", atomically: false, encoding: .utf8) }
        try await withSink { sink, stored in
            let child = try StreamupProcess(scratch.tail(["-v", "--state", state, "--forget-after", "1s"], to: sink.url))
            func saved() -> [SourcePosition] { ((try? SourceState.load(from: state)) ?? nil)?.sources ?? [] }
            #expect(await eventually { saved().count == 2 && saved().allSatisfy { $0.offset > 0 } })
            try FileManager.default.removeItem(atPath: "\(logs)/gone.log")
            // Read to its end and dropped (after the 5 s rotate wait): kept, marked gone.
            #expect(
                await eventually { saved().contains { $0.path.hasSuffix("gone.log") && $0.goneSince != nil } }, "state: \(saved()); stderr: \(child.stderr)")
            // More lines to the other file make more saves; one of them forgets the gone file.
            var line = 1
            #expect(
                await eventually {
                    try? append("kept \(line)\n", to: "\(logs)/kept.log", creating: false)
                    line += 1
                    return saved().map(\.path) == ["\(logs)/kept.log"]
                })
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(storedLines(in: stored, sink)["gone"] == ["gone 0"])
        }
    }
}

extension TailManyFilesTests {
    /// More files than `--max-open-files`: one line says so, and every line of every file still
    /// arrives (idle files are closed and reopened when written to).
    @Test func moreFilesThanMaxOpenFilesIsSaidAndLosesNothing() async throws {
        let scratch = try TailScratch()
        var files = ManyFiles(directory: scratch.logs, count: 6)
        try files.appendToAll()
        try await withSink { sink, stored in
            let child = try StreamupProcess(scratch.tail(["--max-open-files", "2"], to: sink.url))
            let notice =
                "streamup: 6 files to follow, more than --max-open-files 2: the least recently written are closed and wait until they are written to again"
            #expect(await eventually { child.stderr.contains(notice) }, "stderr: \(child.stderr)")
            for _ in 0..<3 {
                try files.appendToAll()
                try await files.expectStored(in: stored, child)
            }
            await files.expectStoredAfterStopping(child, in: stored, sink)
        }
    }
}

// MARK: - Support

/// `streamup arguments…` as root without the capabilities that let root read any file
/// (`setpriv` from util-linux); as another user, just `streamup`.
private func unprivilegedStreamup(_ arguments: [String]) throws -> StreamupProcess {
    guard getuid() == 0 else { return try StreamupProcess(arguments) }
    let dropped = "-dac_override,-dac_read_search"
    return try StreamupProcess(
        executable: URL(fileURLWithPath: "/usr/bin/setpriv"),
        ["--inh-caps=\(dropped)", "--bounding-set=\(dropped)", StreamupProcess.executable.path] + arguments)
}

/// A thread that appends a line to each of `count` files in turn, a round every 5 ms or so,
/// until stopped; it remembers what it wrote.
///
/// Thread safety: `state` is guarded by a mutex; the thread is the only writer of the files.
final class GrowingFiles: Sendable {
    private struct State {
        var running = true
        var lines: [String: [String]] = [:]
        var stopped = false
    }
    private let state = Mutex(State())
    private let directory: String
    private let names: [String]

    init(directory: String, count: Int) throws {
        self.directory = directory
        names = (0..<count).map { String(format: "g%02d", $0) }
        for name in names { try append("", to: "\(directory)/\(name).log", creating: true) }
    }

    func start() {
        Thread.detachNewThread { [self] in
            var round = 0
            while state.withLock({ $0.running }) {
                for name in names {
                    let line = "\(name) line \(round)"
                    try? append(line + "\n", to: "\(directory)/\(name).log", creating: true)
                    state.withLock { $0.lines[name, default: []].append(line) }
                }
                round += 1
                usleep(5000)  // pacing of the writer (about 4,000 lines/s), not a wait for anything
            }
            state.withLock { $0.stopped = true }
        }
    }

    /// Lines written so far, in all.
    var written: Int { state.withLock { $0.lines.values.reduce(0) { $0 + $1.count } } }

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

    var expected: [String: [String]] { state.withLock { $0.lines } }
}
