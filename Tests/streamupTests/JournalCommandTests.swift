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

    /// Journals of three boots (each its own sequence-number id) read from the start with
    /// `--state` and no spool, killed outright twice while entries keep coming: the first time
    /// with segments the sink stored but whose answers were lost. Every entry arrives once: each
    /// sequence goes on from its own position, and entries read again go at the offsets they were
    /// sent at (the same stream), which the sink keeps once.
    @Test func threeBootsKilledTwiceSendEveryEntryOnce() async throws {
        let scratch = try TemporaryDirectory()
        let state = scratch.file("journal.state")
        var journals = try (1...3).map { try JournalFiles(directory: scratch.file("journal"), name: "boot\($0)", boot: String(repeating: "\($0)", count: 32)) }
        var expected: [String] = []
        func append(_ range: Range<Int>) throws {
            for index in journals.indices {
                let lines = range.map { "boot \(index + 1) entry \($0)" }
                try journals[index].append(lines.map { JournalFiles.Entry($0) })
                expected += lines
            }
        }
        try append(0..<40)
        try await withSink(configure: { $0.faults.loseAnswers = 2 }) { sink, stored in
            let arguments = [
                "journal", "--directory", scratch.file("journal"), "--from-start", "--state", state, "--segment-bytes", "200",
                "--segment-seconds", "100ms", sink.url.absoluteString,
            ]
            // Given segments stored by the sink whose answers were lost (nothing acknowledged)...
            let first = try StreamupProcess(arguments)
            #expect(await eventually { Self.records(stored).count >= 10 }, "stderr: \(first.stderr)")
            first.signal(SIGKILL)
            _ = await first.waitForExit()
            // ...when streamup is killed outright twice while entries come,
            try append(40..<50)
            let second = try StreamupProcess(arguments)
            #expect(await eventually { Self.records(stored).count >= 100 }, "stderr: \(second.stderr)")
            second.signal(SIGKILL)
            _ = await second.waitForExit()
            try append(50..<60)
            let third = try StreamupProcess(arguments)
            // then every entry of every boot arrives, none twice.
            #expect(await eventually { Self.records(stored).count >= expected.count }, "stderr: \(third.stderr)")
            third.signal(SIGTERM)
            #expect(await third.waitForExit() == 0, "stderr: \(third.stderr)")
            #expect(Self.records(stored).sorted() == expected.sorted(), "stderr: \(first.stderr)\(second.stderr)\(third.stderr)")
        }
    }

    /// A first run starts at the journal's end and saves that place at once: killed before any
    /// entry came, it sends on the restart the entries written while it was down.
    @Test func aFirstRunSavesWhereItStarts() async throws {
        let scratch = try TemporaryDirectory()
        let state = scratch.file("journal.state")
        var journal = try JournalFiles(directory: scratch.file("journal"))
        try journal.append([.init("before the first start")])
        try await withSink { sink, stored in
            let arguments = ["journal", "--directory", journal.directory, "--state", state, "--segment-seconds", "100ms", sink.url.absoluteString]
            let first = try StreamupProcess(arguments)
            #expect(await eventually { (try? SourceState.load(from: state))??.sources.count == 1 }, "stderr: \(first.stderr)")
            first.signal(SIGKILL)
            _ = await first.waitForExit()
            try journal.append([.init("while it was down")])
            let second = try StreamupProcess(arguments)
            try journal.append([.init("after the restart")])
            #expect(await eventually { Self.records(stored).count >= 2 }, "stderr: \(second.stderr)")
            second.signal(SIGTERM)
            #expect(await second.waitForExit() == 0, "stderr: \(second.stderr)")
            #expect(Self.records(stored) == ["while it was down", "after the restart"])
        }
    }

    /// A 10 MiB message of bytes that are not text goes as records within Loki's line limit,
    /// all of it, and streamup's memory stays a small multiple of the entry (journalctl's JSON
    /// made it 110 bytes a byte).
    @Test func aHugeBinaryMessageGoesInPiecesInBoundedMemory() async throws {
        let scratch = try TemporaryDirectory()
        var journal = try JournalFiles(directory: scratch.file("journal"))
        // Every byte value but the newline (records are lines).
        let message = (0..<(10 << 20)).map { index -> UInt8 in
            let byte = UInt8(truncatingIfNeeded: index &* 7 &+ index >> 9)
            return byte == 0x0A ? 0x0B : byte
        }
        try journal.append([.init(bytes: message), .init("the next entry")])
        try await withSink { sink, stored in
            let child = try StreamupProcess([
                "journal", "--directory", journal.directory, "--from-start", "--max-record", "256k", sink.url.absoluteString,
            ])
            // The stream's bytes (not text).
            func stream() -> [UInt8] {
                let names = ((try? FileManager.default.contentsOfDirectory(atPath: stored.path)) ?? []).filter { $0.hasPrefix("stream-") }
                return names.flatMap { (try? Data(contentsOf: stored.appendingPathComponent($0))).map { Array($0) } ?? [] }
            }
            let next = Array("the next entry\n".utf8)
            #expect(await eventually { stream().suffix(next.count).elementsEqual(next) }, "stderr: \(child.stderr)")
            let peak = peakResidentKiB(of: child.process.processIdentifier)
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let lines = stream().split(separator: 0x0A, omittingEmptySubsequences: false).dropLast()
            #expect(lines.allSatisfy { $0.count < 256 << 10 } && lines.count >= 41, "\(lines.count) records")
            #expect(Array(lines.dropLast().joined()) == message)
            #expect(!child.stderr.contains("split"), "stderr: \(child.stderr)")
            #expect(peak.map { $0 < 100 << 10 } ?? false, "peak RSS \(String(describing: peak)) KiB")
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
