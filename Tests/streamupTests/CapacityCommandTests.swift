import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

/// `--buffer-size`, `--spool-size` and `--segment-bytes` together: the built binary keeps the
/// sizes it was given; segments shrink to half the buffer or spool, and what cannot fit is a
/// usage error (exit 64) naming the options, before anything is sent. (All three were raised
/// to 8 MiB silently: on a small file system the spool then failed with ENOSPC.)
@Suite(.timeLimit(.minutes(2))) struct CapacityCommandTests {
    /// Sizes that cannot work together are refused with one line naming what to change.
    @Test(arguments: [
        (
            ["--spool-size", "512KiB"],
            ["a spool of 524288 bytes (--spool-size) cannot hold one record of up to 1048576 bytes (--max-record)", "--segment-bytes"]
        ),
        (
            ["--buffer-size", "1MiB", "--segment-bytes", "1MiB"],
            ["--segment-bytes 1MiB does not fit --buffer-size 1MiB", "use --segment-bytes 512KiB or less"]
        ),
        (["--segment-bytes", "8MiB"], ["--segment-bytes 8MiB does not fit --buffer-size 8MiB", "use --segment-bytes 4MiB or less"]),
        (
            ["--spool-size", "1MiB", "--segment-bytes", "768KiB"],
            ["--segment-bytes 768KiB does not fit --spool-size 1MiB", "use --segment-bytes 512KiB or less"]
        ),
    ])
    func sizesThatCannotFitAreAUsageError(options: [String], says: [String]) async throws {
        let scratch = try TemporaryDirectory()
        let spool = options.contains("--spool-size") ? ["--spool", scratch.file("spool")] : []
        try await withSink { sink, _ in
            let child = try StreamupProcess(spool + options + [sink.url.absoluteString])
            child.write("a line\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 64, "stderr: \(child.stderr)")
            let lines = child.stderr.split(separator: "\n")
            #expect(lines.count == 1 && says.allSatisfy(child.stderr.contains), "stderr: \(child.stderr)")
            #expect(sink.requests.isEmpty)
        }
    }

    /// A 512 KiB spool with records of up to 256 KiB delivers 4 MiB of lines whole, in
    /// segments of at most 256 KiB (half the spool).
    @Test func aSmallSpoolDeliversEverythingInSegmentsThatFit() async throws {
        let scratch = try TemporaryDirectory()
        var random = SeededRandom()
        var text = ""
        var number = 0
        while text.utf8.count < 4 << 20 {
            text += "line \(number) " + String(repeating: "z", count: Int.random(in: 0...2_000, using: &random)) + "\n"
            number += 1
        }
        let input = scratch.file("input")
        try text.write(toFile: input, atomically: false, encoding: .utf8)
        try await withSink { sink, directory in
            let child = try StreamupProcess(
                ["--spool", scratch.file("spool"), "--spool-size", "512KiB", "--max-record", "256KiB", sink.url.absoluteString],
                stdinFile: input)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(streamText(in: directory) == text, "\(random)")
            let largest = sink.requests.map(\.bodyByteCount).max() ?? 0
            #expect(largest > 0 && largest <= 256 << 10, "largest request \(largest) bytes")
        }
    }
}
