import Foundation
import StreamUp
import StreamUpSink
import StreamUpTestSupport
import Testing

/// `streamup tail` as a user runs it: the built binary following a real file into the sink.
@Suite(.timeLimit(.minutes(2))) struct TailCommandTests {
    /// The body being received right now, as the sink is storing it.
    private func bodyInProgress(_ directory: URL) -> String {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        guard let name = names.sorted().last(where: { $0.hasSuffix(".partial") }) else { return "" }
        return (try? String(contentsOfFile: directory.appendingPathComponent(name).path, encoding: .utf8)) ?? ""
    }

    /// The stream files the sink merged (one per run in segments), sorted.
    private func streams(_ directory: URL) -> [String] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasPrefix("stream-") }
        return names.compactMap { try? String(contentsOfFile: directory.appendingPathComponent($0).path, encoding: .utf8) }.sorted()
    }

    /// Following across a rename rotation, as one request: the existing content, lines
    /// appended, and the new file's lines all arrive, in order, once, in one live body.
    @Test func followsAppendsAndRotationIntoOneStream() async throws {
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        let log = work.appendingPathComponent("app.log").path
        try "existing\n".write(toFile: log, atomically: false, encoding: .utf8)
        try await withSink { sink, stored in
            let child = try StreamupProcess(["tail", "--single-request", "--from-start", log, sink.url.absoluteString])
            #expect(await eventually { bodyInProgress(stored) == "existing\n" })
            try append("appended\n", to: log)
            #expect(await eventually { bodyInProgress(stored) == "existing\nappended\n" })
            // logrotate's `create`: rename, then a new file at the name.
            try FileManager.default.moveItem(atPath: log, toPath: log + ".1")
            try append("late line in the old file\n", to: log + ".1")
            try "first line of the new file\n".write(toFile: log, atomically: false, encoding: .utf8)
            let expected = "existing\nappended\nlate line in the old file\nfirst line of the new file\n"
            #expect(await eventually { bodyInProgress(stored) == expected })
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(sink.requests.last?.bodyByteCount == expected.utf8.count)
            #expect(sink.requests.last?.isComplete == true)
        }
    }

    /// With `--state`, a restart continues exactly after what the server acknowledged: lines
    /// written while streamup was down arrive, and nothing is sent twice (as one request, the
    /// state moves at its end; in segments, at each acknowledgement).
    @Test(arguments: [["--single-request"], []])
    func restartWithStateContinuesAfterTheAcknowledgedOffset(mode: [String]) async throws {
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        let log = work.appendingPathComponent("app.log").path
        let state = work.appendingPathComponent("app.state").path
        try "one\ntwo\n".write(toFile: log, atomically: false, encoding: .utf8)
        let single = mode == ["--single-request"]
        try await withSink { sink, stored in
            func arrived() -> String { single ? bodyInProgress(stored) : streams(stored).last ?? "" }
            let arguments = ["tail"] + mode + ["--from-start", "--state", state, log, sink.url.absoluteString]
            let first = try StreamupProcess(arguments)
            #expect(await eventually { arrived() == "one\ntwo\n" })
            first.signal(SIGTERM)
            #expect(await first.waitForExit() == 0, "stderr: \(first.stderr)")
            #expect(FileManager.default.fileExists(atPath: state))

            try append("three\n", to: log)  // while streamup is down
            let second = try StreamupProcess(arguments)
            #expect(await eventually { single ? arrived() == "three\n" : streams(stored).contains("three\n") })
            try append("four\n", to: log)
            #expect(await eventually { single ? arrived() == "three\nfour\n" : streams(stored).contains("three\nfour\n") })
            second.signal(SIGTERM)
            #expect(await second.waitForExit() == 0, "stderr: \(second.stderr)")

            if single {
                let bodies = sink.requests.compactMap(\.storedFile).compactMap { try? String(contentsOfFile: $0, encoding: .utf8) }
                #expect(bodies == ["one\ntwo\n", "three\nfour\n"])
            } else {
                #expect(streams(stored) == ["one\ntwo\n", "three\nfour\n"])
            }
        }
    }
}

extension TailCommandTests {
    /// `tail --resumable` through a sink that cuts a connection every 1,000 bytes: the file
    /// arrives whole and once, and SIGTERM completes the upload (exit 0).
    @Test func followsIntoAResumableUploadThroughCuts() async throws {
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        let log = work.appendingPathComponent("app.log").path
        var expected = (0..<200).map { "line \($0)\n" }.joined()
        try expected.write(toFile: log, atomically: false, encoding: .utf8)
        try await withSink(configure: { $0.faults = SinkFaults(dropAfterBytes: 1_000, dropRepeatedly: true) }) { sink, directory in
            let child = try StreamupProcess(["tail", "--from-start", "--resumable", "--segment-seconds", "100ms", log, sink.url.absoluteString])
            #expect(await eventually { streamText(in: directory) == expected })
            let more = (200..<300).map { "line \($0)\n" }.joined()
            try append(more, to: log)
            expected += more
            #expect(await eventually { streamText(in: directory) == expected })
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(streamText(in: directory) == expected)
            #expect(sink.requests.contains { !$0.isComplete }, "no connection was cut")
        }
    }

    /// A line `--drop` leaves out still moves the saved position once the lines before it are
    /// acknowledged: a restart without the filter does not send it.
    @Test func droppedLinesMoveTheSavedPosition() async throws {
        let scratch = try TemporaryDirectory()
        let log = scratch.file("app.log")
        let state = scratch.file("app.state")
        try "keep 1\nDEBUG 2\n".write(toFile: log, atomically: false, encoding: .utf8)
        try await withSink { sink, stored in
            func streams() -> [String] {
                let names = ((try? FileManager.default.contentsOfDirectory(atPath: stored.path)) ?? []).filter { $0.hasPrefix("stream-") }
                return names.compactMap { try? String(contentsOfFile: stored.appendingPathComponent($0).path, encoding: .utf8) }.sorted()
            }
            func offset() -> Int64? { (try? SourceState.load(from: state))??.sources.last?.offset }
            let arguments = ["tail", "--from-start", "--state", state, "--segment-seconds", "100ms", log, sink.url.absoluteString]
            let first = try StreamupProcess(arguments + ["--drop", "^DEBUG "])
            // Given a kept line acknowledged and the dropped line after it,
            #expect(await eventually { streams() == ["keep 1\n"] })
            #expect(await eventually { offset() == 15 }, "state: \(String(describing: offset()))")
            // and a dropped line, then a kept one,
            try append("DEBUG 3\n", to: log)
            try append("keep 4\n", to: log)
            #expect(await eventually { offset() == 30 }, "state: \(String(describing: offset()))")
            first.signal(SIGKILL)
            _ = await first.waitForExit()
            // when streamup restarts without the filter, only what came since is sent.
            try append("DEBUG 5\n", to: log)
            let second = try StreamupProcess(arguments)
            #expect(await eventually { streams().joined().contains("DEBUG 5") })
            second.signal(SIGTERM)
            #expect(await second.waitForExit() == 0, "stderr: \(second.stderr)")
            #expect(streams() == ["DEBUG 5\n", "keep 1\nkeep 4\n"])
        }
    }

    /// With segments, the saved position follows each acknowledgement: after a SIGKILL (no
    /// clean end), a restart sends exactly what came after the last acknowledged segment.
    @Test func segmentedStateSurvivesSigkill() async throws {
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        let log = work.appendingPathComponent("app.log").path
        let state = work.appendingPathComponent("app.state").path
        try "one\ntwo\n".write(toFile: log, atomically: false, encoding: .utf8)
        try await withSink { sink, stored in
            func streams() -> [String] {
                let names = ((try? FileManager.default.contentsOfDirectory(atPath: stored.path)) ?? []).filter { $0.hasPrefix("stream-") }
                return names.compactMap { try? String(contentsOfFile: stored.appendingPathComponent($0).path, encoding: .utf8) }
            }
            let arguments = ["tail", "--from-start", "--state", state, "--segment-seconds", "100ms", log, sink.url.absoluteString]
            let first = try StreamupProcess(arguments)
            // Given the lines acknowledged and the position saved...
            #expect(await eventually { streams() == ["one\ntwo\n"] })
            #expect(await eventually { (try? SourceState.load(from: state))??.sources.last?.offset == 8 })
            // ...when streamup is killed outright and lines come while it is down,
            first.signal(SIGKILL)
            _ = await first.waitForExit()
            try append("three\n", to: log)
            let second = try StreamupProcess(arguments)
            // then the restart sends exactly those lines: nothing lost, nothing twice.
            #expect(await eventually { streams().sorted() == ["one\ntwo\n", "three\n"] })
            second.signal(SIGTERM)
            #expect(await second.waitForExit() == 0, "stderr: \(second.stderr)")
        }
    }

    /// A file behind a directory this user may not look into is said as what it is, a
    /// permission problem: never "does not exist (yet)", and no inotify limit to raise. (Run as
    /// `nobody` through util-linux's `setpriv`: root reads everything.)
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func aDirectoryThatCannotBeReadIsNotAMissingOne() async throws {
        let scratch = try TemporaryDirectory()
        let secret = scratch.url.appendingPathComponent("secret")
        try FileManager.default.createDirectory(at: secret.appendingPathComponent("sub"), withIntermediateDirectories: true)
        try "x\n".write(toFile: secret.appendingPathComponent("sub/app.log").path, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: secret.path)
        let child = try StreamupProcess(
            executable: URL(fileURLWithPath: "/usr/bin/setpriv"),
            [
                "--reuid=nobody", "--regid=nogroup", "--clear-groups", StreamupProcess.executable.path, "tail", secret.path + "/sub/app.log",
                "http://127.0.0.1:9/",
            ])
        #expect(await eventually { child.stderr.contains("cannot read \(secret.path)/sub: Permission denied") }, "stderr: \(child.stderr)")
        #expect(!child.stderr.contains("does not exist") && !child.stderr.contains("max_user_watches"), "stderr: \(child.stderr)")
        child.signal(SIGTERM)
        _ = await child.waitForExit()
    }
}
