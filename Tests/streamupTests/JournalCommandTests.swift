import Foundation
import StreamUp
import StreamUpTestSupport
import Testing

/// `streamup journal` as a user runs it: the built binary following journal files (written by
/// `systemd-journal-remote`, read through journalctl) into the sink.
@Suite(.timeLimit(.minutes(2)), .enabled(if: JournalFiles.isAvailable)) struct JournalCommandTests {
    /// Every record the sink merged, over all runs (a stream file per run).
    private static func records(_ directory: URL) -> [String] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasPrefix("stream-") }.sorted()
        return names.flatMap { name in
            ((try? String(contentsOfFile: directory.appendingPathComponent(name).path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
    }

    /// An entry's record carries its own time (not the read time), host, unit and priority;
    /// `--unit` and `--drop` leave out the others.
    @Test func entriesArriveWithTheirOwnTimeAndFields() async throws {
        let scratch = try TemporaryDirectory()
        var journal = try JournalFiles(directory: scratch.file("journal"))
        try journal.append([
            .init("hello é", priority: "4"), .init("DEBUG cache", priority: "7"), .init("from the database", unit: "db.service", priority: "3"),
        ])
        try await withSink { sink, stored in
            let child = try StreamupProcess([
                "journal", "--directory", journal.directory, "--unit", "app.service", "--from-start", "--drop", "^DEBUG", "--format", "ndjson",
                sink.url.absoluteString,
            ])
            try journal.append([.init("after the start")])
            #expect(await eventually { Self.records(stored).count >= 1 } && child.process.isRunning, "stderr: \(child.stderr)")
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let objects = Self.records(stored).compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
            #expect(objects.map { $0["message"] as? String } == ["hello é", "after the start"])
            let first = try #require(objects.first)
            let written = Date(timeIntervalSince1970: Double(JournalFiles.milliseconds(of: 0)) / 1000)
            let time = ISO8601DateFormatter.string(from: written, timeZone: .gmt, formatOptions: [.withInternetDateTime, .withFractionalSeconds])
            #expect(first["time"] as? String == time, "\(first)")
            #expect(first["host"] as? String == JournalFiles.host && first["unit"] as? String == "app.service", "\(first)")
            #expect(first["priority"] as? String == "4" && first["identifier"] as? String == "app", "\(first)")
        }
    }

    /// With `--state`, the cursor follows the acknowledgements: after kill -9, the entries
    /// written while streamup was down arrive on the restart, and none twice.
    @Test func killedAndRestartedItSendsWhatCameMeanwhileOnce() async throws {
        let scratch = try TemporaryDirectory()
        let state = scratch.file("journal.state")
        var journal = try JournalFiles(directory: scratch.file("journal"))
        try journal.append([.init("one"), .init("two")])
        try await withSink { sink, stored in
            let arguments = [
                "journal", "--directory", journal.directory, "--from-start", "--state", state, "--segment-seconds", "100ms", sink.url.absoluteString,
            ]
            let first = try StreamupProcess(arguments)
            // Given two entries acknowledged and their cursor saved...
            #expect(await eventually { Self.records(stored) == ["one", "two"] }, "stderr: \(first.stderr)")
            #expect(await eventually { (try? SourceState.load(from: state))??.sources.last?.offset == 3 })
            // ...when streamup is killed outright and entries come while it is down,
            first.signal(SIGKILL)
            _ = await first.waitForExit()
            try journal.append([.init("three"), .init("four")])
            let second = try StreamupProcess(arguments)
            try journal.append([.init("five")])
            // then the restart sends exactly those and what follows: nothing lost, nothing twice.
            #expect(await eventually { Self.records(stored).count >= 5 }, "stderr: \(second.stderr)")
            second.signal(SIGTERM)
            #expect(await second.waitForExit() == 0, "stderr: \(second.stderr)")
            #expect(Self.records(stored).sorted() == ["five", "four", "one", "three", "two"])
        }
    }

    /// streamup killed outright (`kill -9`) takes journalctl with it: restarts do not pile up
    /// followers.
    @Test func killedOutrightItTakesJournalctlWithIt() async throws {
        let scratch = try TemporaryDirectory()
        var journal = try JournalFiles(directory: scratch.file("journal"))
        try journal.append([.init("one")])
        try await withSink { sink, stored in
            let child = try StreamupProcess(["journal", "--directory", journal.directory, "--from-start", sink.url.absoluteString])
            #expect(await eventually { Self.records(stored) == ["one"] }, "stderr: \(child.stderr)")
            let followers = Self.children(of: child.process.processIdentifier)
            defer { for pid in followers { kill(pid, SIGKILL) } }
            #expect(followers.count == 1, "children: \(followers)")
            child.signal(SIGKILL)
            for pid in followers {
                #expect(await eventually(within: .seconds(10)) { !processRuns(pid) }, "journalctl \(pid) runs on without streamup")
            }
        }
    }

    /// The processes `pid` started, from `/proc/PID/task/TID/children`.
    private static func children(of pid: Int32) -> [Int32] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.flatMap { task in
            ((try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? "").split(separator: " ").compactMap { Int32($0) }
        }
    }
}
