import Foundation
import StreamUpTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A full disk under `--spool`: the built binary on a spool in a file system of its own
/// (2 MiB of tmpfs), which a filler file fills and its removal frees again.
@Suite(.timeLimit(.minutes(2))) struct FullDiskTests {
    /// stdin through a spool whose disk fills up: streamup says once that it is full and waits,
    /// reading no more input; once space is freed it says once that it writes again, and every
    /// line arrives exactly once and in order, exit 0.
    @Test(.enabled(if: SmallFileSystem.isAvailable)) func aFullSpoolDiskMakesStdinWaitAndLosesNothing() async throws {
        let scratch = try TemporaryDirectory()
        let disk = try SmallFileSystem(at: scratch.file("disk"))
        defer { disk.unmount() }
        let spool = disk.path + "/spool"
        let filler = disk.path + "/filler"
        let lines = (1...1_500).map { String(format: "line %05d of a stream that waits for a disk\n", $0) }
        try await withSink { sink, directory in
            let child = try StreamupProcess(
                ["--spool", spool, "--spool-size", "512k", "--max-record", "64k", "--segment-seconds", "200ms", sink.url.absoluteString])
            try #require(await eventually { FileManager.default.fileExists(atPath: spool + "/stream.json") }, "stderr: \(child.stderr)")
            // Given a disk with no room left…
            disk.fill(with: filler)
            // …the lines read cannot be spooled: streamup says so once and reads no more.
            child.write(lines[..<1_000].joined())
            try #require(await eventually { child.stderr.contains("is full") }, "stderr: \(child.stderr)")
            #expect(streamText(in: directory) == nil, "nothing can have been spooled, so nothing sent")
            child.write(lines[1_000...].joined())
            // When the filler goes, it writes again and delivers all of it.
            try FileManager.default.removeItem(atPath: filler)
            #expect(await eventually { child.stderr.contains("writing again") }, "stderr: \(child.stderr)")
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(streamText(in: directory) == lines.joined(), "the lines arrived with a gap, twice, or out of order")
            let stderr = child.stderr.split(separator: "\n")
            #expect(stderr.filter { $0.contains("is full") }.count == 1, "stderr: \(child.stderr)")
            #expect(stderr.filter { $0.contains("writing again") }.count == 1, "stderr: \(child.stderr)")
        }
    }

    /// A stop (SIGTERM) while waiting for room ends as a stop does: what the spool holds is
    /// delivered, and one line says how many bytes read were waiting for room and are lost.
    @Test(.enabled(if: SmallFileSystem.isAvailable)) func aStopWhileTheSpoolDiskIsFullSaysWhatIsLost() async throws {
        let scratch = try TemporaryDirectory()
        let disk = try SmallFileSystem(at: scratch.file("disk"))
        defer { disk.unmount() }
        let spool = disk.path + "/spool"
        try await withSink { sink, directory in
            let child = try StreamupProcess(
                ["--spool", spool, "--spool-size", "512k", "--max-record", "64k", "--segment-seconds", "200ms", sink.url.absoluteString])
            child.write("delivered before\n")
            try #require(await eventually { streamText(in: directory) == "delivered before\n" }, "stderr: \(child.stderr)")
            disk.fill(with: disk.path + "/filler")
            // More than the page the spool file has begun can take.
            child.write(String(repeating: "w", count: 8_000) + "\n")
            try #require(await eventually { child.stderr.contains("is full") }, "stderr: \(child.stderr)")
            child.signal(SIGTERM)
            let status = await child.waitForExit()
            #expect(status == 0, "stderr: \(child.stderr)")
            let line = child.stderr.split(separator: "\n").first { $0.contains("not kept") }
            #expect(line?.contains("bytes read were waiting for room in the full spool \(spool)") == true, "stderr: \(child.stderr)")
            #expect(line?.contains("lost") == true, "stderr: \(child.stderr)")
            #expect(streamText(in: directory) == "delivered before\n")
        }
    }
}
