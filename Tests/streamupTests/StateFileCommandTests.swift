import Foundation
import StreamUpTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `tail --state FILE` through the built binary: one process owns a state file, streamup never
/// follows its own files, and a state that cannot be saved is refused at start.
@Suite(.timeLimit(.minutes(2))) struct StateFileCommandTests {
    /// Everything the sink stored, stream files in the order they were last written (each run
    /// of `tail` without a spool is a stream of its own, named by a random id).
    private static func stored(_ directory: URL) -> String {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasPrefix("stream-") }
        let paths = names.map { directory.appendingPathComponent($0).path }
        func written(_ path: String) -> Date {
            ((try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date) ?? .distantPast
        }
        return paths.sorted { written($0) < written($1) }.compactMap { try? String(contentsOfFile: $0, encoding: .utf8) }.joined()
    }

    /// A second `tail` with the same state file is refused (exit 74, one line) while the first
    /// runs: both would resume from the same positions and every line would arrive twice.
    @Test func secondProcessWithTheSameStateIsRefused() async throws {
        let scratch = try TailScratch()
        let log = scratch.logs + "/app.log"
        try "one\n".write(toFile: log, atomically: false, encoding: .utf8)
        try await withSink { sink, directory in
            let arguments = scratch.tail(["--state", scratch.state], "/app.log", to: sink.url)
            let first = try StreamupProcess(arguments)
            #expect(await eventually { Self.stored(directory) == "one\n" }, "stderr: \(first.stderr)")
            let second = try StreamupProcess(arguments)
            #expect(await second.waitForExit(timeout: 20) == 74, "stderr: \(second.stderr)")
            #expect(
                second.stderr
                    == "streamup: tail: the state file \(scratch.state) is in use by another streamup process; give each a --state of its own\n")
            try append("two\n", to: log)
            #expect(await eventually { Self.stored(directory) == "one\ntwo\n" })
            first.signal(SIGTERM)
            #expect(await first.waitForExit() == 0, "stderr: \(first.stderr)")
            #expect(Self.stored(directory) == "one\ntwo\n")
            // Once the first has ended, the state file is free again.
            let third = try StreamupProcess(arguments)
            try append("three\n", to: log)
            #expect(await eventually { Self.stored(directory).hasSuffix("three\n") }, "stderr: \(third.stderr)")
            third.signal(SIGTERM)
            #expect(await third.waitForExit() == 0, "stderr: \(third.stderr)")
            #expect(Self.stored(directory) == "one\ntwo\nthree\n")
        }
    }

    /// A `kill -9` in the middle of a save leaves the save's temporary file
    /// (`.NAME.PID.RANDOM.tmp`) beside the state file or spool's `stream.json`; with several
    /// requests in flight `stream.json` is saved for every segment cut, so a kill often lands
    /// there. The next start removes such files (it owns both through their locks) and leaves
    /// any other file alone.
    @Test func leftoversOfASaveCutShortAreRemovedAtTheNextStart() async throws {
        let scratch = try TailScratch()
        try "one\n".write(toFile: scratch.logs + "/app.log", atomically: false, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: scratch.spool, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let stateName = (scratch.state as NSString).lastPathComponent
        let stateDirectory = (scratch.state as NSString).deletingLastPathComponent
        let leftovers = [stateDirectory + "/.\(stateName).4242.17.tmp", scratch.spool + "/.stream.json.4242.18.tmp"]
        let others = [stateDirectory + "/.\(stateName).notes.tmp", stateDirectory + "/.other.state.4242.19.tmp"]
        for path in leftovers + others { try "{}\n".write(toFile: path, atomically: false, encoding: .utf8) }
        try await withSink { sink, directory in
            let child = try StreamupProcess(
                scratch.tail(["--state", scratch.state, "--spool", scratch.spool, "--max-in-flight", "8"], "/app.log", to: sink.url))
            #expect(await eventually { Self.stored(directory) == "one\n" }, "stderr: \(child.stderr)")
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        }
        for path in leftovers { #expect(!FileManager.default.fileExists(atPath: path), "\(path) is left") }
        for path in others { #expect(FileManager.default.fileExists(atPath: path), "\(path) is not streamup's and stays") }
    }

    /// A state file (and a spool) inside the followed directory is not followed: its saves
    /// (and their temporary and lock files) never become lines.
    @Test func ownFilesInAFollowedDirectoryAreNotFollowed() async throws {
        let scratch = try TailScratch()
        let log = scratch.logs + "/app.log"
        try "one\n".write(toFile: log, atomically: false, encoding: .utf8)
        let state = scratch.logs + "/tail.state"
        try await withSink { sink, directory in
            let child = try StreamupProcess(
                scratch.tail(["--state", state, "--spool", scratch.logs + "/spool"], "/", to: sink.url))
            #expect(await eventually { Self.stored(directory) == "one\n" }, "stderr: \(child.stderr)")
            // Each line moves the state (a save: a temporary file renamed over it), which a
            // followed state file would ship with the next line.
            for line in ["two", "three", "four"] {
                try append(line + "\n", to: log)
                #expect(await eventually { Self.stored(directory).hasSuffix(line + "\n") }, "stored: \(Self.stored(directory))")
            }
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(Self.stored(directory) == "one\ntwo\nthree\nfour\n")
            #expect(FileManager.default.fileExists(atPath: state))
        }
    }

    /// A state file streamup cannot save (its directory does not take new files for the user
    /// streamup runs as: `nobody` here, through `setpriv`, since root writes anywhere) is
    /// refused at start with exit 74 and one line, before a line is sent.
    @Test(.enabled(if: StreamupProcess.canRunAsNobody, "needs root and setpriv"))
    func unwritableStateIsRefusedAtStart() async throws {
        let scratch = try TailScratch()
        let log = scratch.logs + "/app.log"
        try "one\n".write(toFile: log, atomically: false, encoding: .utf8)
        for path in [scratch.directory.path, scratch.logs] { chmod(path, 0o755) }
        chmod(log, 0o644)
        try await withSink { sink, directory in
            let child = try StreamupProcess.asNobody(scratch.tail(["--state", scratch.state], "/app.log", to: sink.url))
            #expect(await child.waitForExit(timeout: 20) == 74, "stderr: \(child.stderr)")
            #expect(
                child.stderr
                    == "streamup: tail: cannot save the state file \(scratch.state) (a file cannot be made beside it): Permission denied (errno 13)\n")
            #expect(Self.stored(directory).isEmpty)
        }
    }

    /// A state file that cannot be saved while streamup runs (a full disk; here its directory
    /// no longer takes new files for `nobody`) fails every save, one per acknowledgement: that
    /// is one line on stderr, not one per save, and one more when a save works again. The
    /// lines go on being delivered meanwhile.
    @Test(.enabled(if: StreamupProcess.canRunAsNobody, "needs root and setpriv"))
    func aStateFileThatCannotBeSavedIsSaidOnceAndOnceMoreWhenItIs() async throws {
        let scratch = try TailScratch()
        let log = scratch.logs + "/app.log"
        try "one\n".write(toFile: log, atomically: false, encoding: .utf8)
        for path in [scratch.directory.path, scratch.logs] { chmod(path, 0o755) }
        chmod(log, 0o644)
        let states = scratch.directory.file("states")
        try FileManager.default.createDirectory(atPath: states, withIntermediateDirectories: false)
        chown(states, 65534, 65534)
        chmod(states, 0o755)
        let state = states + "/tail.state"
        try await withSink { sink, directory in
            let child = try StreamupProcess.asNobody(scratch.tail(["--state", state], "/app.log", to: sink.url))
            #expect(await eventually { Self.stored(directory) == "one\n" }, "stderr: \(child.stderr)")
            chmod(states, 0o555)
            var expected = "one\n"
            for line in ["two", "three", "four", "five"] {
                try append(line + "\n", to: log)
                expected += line + "\n"
                let want = expected
                #expect(await eventually { Self.stored(directory) == want }, "stderr: \(child.stderr)")
            }
            chmod(states, 0o755)
            try append("six\n", to: log)
            // A checkpoint may save (and say so) before "six" is read: wait for both, since
            // SIGTERM stops reading (a line not read yet is read at the next start).
            #expect(await eventually { Self.stored(directory) == expected + "six\n" }, "stderr: \(child.stderr)")
            #expect(await eventually { child.stderr.contains("is saved again") }, "stderr: \(child.stderr)")
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(Self.stored(directory) == expected + "six\n")
            let lines = child.stderr.split(separator: "\n")
            #expect(lines.filter { $0.contains("cannot save the state file \(state)") }.count == 1, "stderr: \(child.stderr)")
            #expect(lines.filter { $0 == "streamup: the state file \(state) is saved again" }.count == 1, "stderr: \(child.stderr)")
        }
    }
}
