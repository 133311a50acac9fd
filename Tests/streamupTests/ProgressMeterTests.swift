import Foundation
import StreamUpTestSupport
import Testing

@testable import streamup

/// The progress meter: what its line says, and when it shows.
@Suite(.timeLimit(.minutes(2))) struct ProgressMeterTests {
    /// The meter's line reads like curl's: sizes in binary units, a rate, retries, time.
    @Test func theLineReadsLikeCurlsMeter() {
        let counts = ProgressMeter.Counts(read: 12_900_000, sent: 12_500_000, acknowledged: 12_000_000, waiting: 421_888, retries: 1)
        #expect(
            ProgressMeter.line(counts, rate: 2_202_009, elapsed: .seconds(67))
                == "12.3 MiB read, 11.9 MiB sent at 2.10 MiB/s, 11.4 MiB acknowledged, 412 KiB waiting, 1 retry, 1:07")
        #expect(ProgressMeter.size(512) == "512 B" && ProgressMeter.size(1536) == "1.50 KiB" && ProgressMeter.size(3 << 30) == "3.00 GiB")
    }

    /// On a stderr that is not a terminal there is no meter unless asked; `--progress` gives one
    /// line a second.
    @Test func theMeterShowsOnATerminalOrWhenAsked() async throws {
        try await withSink { sink, _ in
            let quiet = try StreamupProcess([sink.url.absoluteString])
            let asked = try StreamupProcess(["--progress", sink.url.absoluteString])
            for child in [quiet, asked] { child.write("a line\n") }
            #expect(await eventually(within: .seconds(20)) { asked.stderr.contains(" sent at ") })
            for child in [quiet, asked] { child.closeStdin() }
            #expect(await quiet.waitForExit() == 0 && quiet.stderr.isEmpty, "stderr: \(quiet.stderr)")
            #expect(await asked.waitForExit() == 0)
            #expect(asked.stderr.contains("7 B read, "), "stderr: \(asked.stderr)")
        }
    }

    /// A slow receiver that has taken part of a segment and not answered yet: the meter shows
    /// the bytes sent (and a rate) apart from the acknowledged ones, which are still none.
    @Test func aSlowReceiverShowsBytesSentBeforeTheyAreAcknowledged() async throws {
        let server = try StubHTTPServer(.stallUntilResumed)
        defer { server.stop() }
        let child = try StreamupProcess(["--progress", "--segment-bytes", "4MiB", server.url])
        defer { if !child.hasExited { child.signal(SIGKILL) } }
        // Lines of 1000 bytes, 7.81 MiB in all, more than the stalled socket buffers hold.
        let line = String(repeating: "x", count: 999) + "\n"
        let writer = Thread {
            for _ in 0..<(1 << 13) { child.write(line) }
            child.closeStdin()
        }
        writer.start()
        #expect(await eventually { server.isStalling }, "stderr: \(child.stderr)")
        // The meter's lines while the receiver holds the answer back: some bytes sent, none
        // acknowledged.
        let meter = try #require(
            await poll {
                child.stderr.split(separator: "\n").last { $0.contains(" sent at ") && $0.contains(" 0 B acknowledged") && !$0.contains(" 0 B sent") }
            }, "stderr: \(child.stderr)")
        #expect(meter.contains(" KiB sent at ") || meter.contains(" MiB sent at "), "\(meter)")
        server.resume()
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        #expect(server.receivedBodies.map(\.count).reduce(0, +) == 1000 << 13)
    }

    /// On a terminal (a pseudo-terminal made by `script`), the meter redraws one line in place.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script")))
    func onATerminalTheMeterRedrawsInPlace() async throws {
        try await withSink { sink, _ in
            let command = "(echo one; sleep 2.5; echo two) | \(StreamupProcess.executable.path) \(sink.url.absoluteString)"
            let terminal = try StreamupProcess(executable: URL(fileURLWithPath: "/usr/bin/script"), ["-qec", command, "/dev/null"])
            terminal.closeStdin()
            #expect(await terminal.waitForExit() == 0)
            #expect(terminal.stdout.contains("\r\u{1B}[K") && terminal.stdout.contains(" sent at "), "\(terminal.stdout.debugDescription)")
        }
    }
}
