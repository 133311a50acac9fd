import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// Measurements behind the choices in Body/ and Records/ (gzip level, flush cost, formatter
/// speed). They print numbers and assert only that what they measured decodes correctly; they
/// run only when asked, in an optimised build:
///
///     swift build -c release --build-tests -Xswiftc -enable-testing
///     STREAMUP_MEASURE=1 swift test -c release --skip-build -Xswiftc -enable-testing --filter FormatMeasurements
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["STREAMUP_MEASURE"] == "1"))
struct FormatMeasurements {
    /// CPU seconds used by the calling thread.
    private static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// The best of `runs` CPU times of `work`.
    private static func bestCPUSeconds(runs: Int = 3, _ work: () throws -> Void) rethrows -> Double {
        var best = Double.infinity
        for _ in 0..<runs {
            let start = threadCPUSeconds()
            try work()
            best = min(best, threadCPUSeconds() - start)
        }
        return best
    }

    private static func ndjsonRecords(_ lines: [[UInt8]]) throws -> [UInt8] {
        var formatter = try RecordFormatter(format: .ndjson, host: "web-1", path: "/var/log/app.log")
        var output: [UInt8] = []
        for (index, line) in lines.enumerated() {
            line.withUnsafeBytes { formatter.append($0, milliseconds: 1_767_225_600_000 + Int64(index) * 7, to: &output) }
        }
        return output
    }

    /// Gzip level 1 against 6 (and 9) on log lines and on the same lines as ndjson records:
    /// compression ratio and input MB per CPU second.
    @Test func gzipLevels() throws {
        let lines = LogLines.make(count: 200_000)
        let logText: [UInt8] = lines.flatMap { $0 + [0x0A] }
        let inputs: [(String, [UInt8])] = [("log lines", logText), ("ndjson records", try Self.ndjsonRecords(lines))]
        for (name, input) in inputs {
            for level: Int32 in [1, 6, 9] {
                var output = [UInt8](repeating: 0, count: input.count + 65536)
                var produced = 0
                let seconds = try Self.bestCPUSeconds {
                    let encoder = try GzipEncoder(level: level)
                    let step = input.withUnsafeBytes { bytes in
                        output.withUnsafeMutableBytes { encoder.encode(input: bytes, into: $0, flush: .finish) }
                    }
                    #expect(encoder.isFinished)
                    produced = step.produced
                }
                let megabytes = Double(input.count) / 1e6
                print(
                    "gzip \(name) level \(level): "
                        + String(
                            format: "%.1f MB -> %.2f MB, ratio %.2f, %.0f MB/s (CPU)", megabytes,
                            Double(produced) / 1e6, Double(input.count) / Double(produced), megabytes / seconds))
            }
        }
    }

    /// What sync flushes cost: the body of a GzipStage over log lines that arrive one per lower
    /// read, pausing after every line, every 10 and every 100 lines, and arriving steadily at
    /// 1,000 lines/s (1 ms per line on a manual clock) with the 250 ms delay, against one-shot
    /// compression.
    @Test func syncFlushOverhead() throws {
        let lines = LogLines.make(count: 100_000).map { $0 + [0x0A] }
        let input = lines.flatMap { $0 }
        let oneShotStage = try GzipStage(over: BytesSource(pieces: [input]), clock: ManualClock())
        let oneShot: Int = try readAll(oneShotStage).count
        print(String(format: "flush: %.2f MB of log lines, one-shot gzip %d bytes", Double(input.count) / 1e6, oneShot))
        for every in [1, 10, 100, 1000] {
            let source = BytesSource(pieces: lines, pausesAfter: Set(stride(from: every - 1, to: lines.count, by: every)))
            let body = try readAll(GzipStage(over: source, clock: ManualClock()))
            print(String(format: "flush: pause every %4d lines: %d bytes, +%.1f%%", every, body.count, 100 * (Double(body.count) / Double(oneShot) - 1)))
        }
        let clock = ManualClock()
        let steady = BytesSource(pieces: lines)
        steady.beforeRead = { clock.advance(by: .milliseconds(1)) }
        let body = try readAll(GzipStage(over: steady, flushDelay: .milliseconds(250), clock: clock))
        print(String(format: "flush: steady 1000 lines/s, 250 ms delay: %d bytes, +%.2f%%", body.count, 100 * (Double(body.count) / Double(oneShot) - 1)))
        #expect(try GzipCheck.pythonGzip(body) == input)
    }

    /// RecordFormatter lines per CPU second, for each format, on log lines and on JSON lines.
    @Test func formatterSpeed() throws {
        let lines = LogLines.make(count: 200_000)
        let jsonLines = lines.map { Array(#"{"level":"info","msg":""#.utf8) + $0 + Array(#"","n":42}"#.utf8) }
        let cases: [(String, RecordFormat, [[UInt8]])] = [
            ("raw, log lines", .raw, lines), ("ndjson, log lines", .ndjson, lines),
            ("json, log lines (wrapped)", .json, lines), ("json, object lines (merged)", .json, jsonLines),
        ]
        for (name, format, input) in cases {
            var formatter = try RecordFormatter(format: format, host: "web-1", path: "/var/log/app.log", fields: [("env", "prod")])
            var output: [UInt8] = []
            output.reserveCapacity(input.count * 250)
            let seconds = Self.bestCPUSeconds {
                output.removeAll(keepingCapacity: true)
                for (index, line) in input.enumerated() {
                    line.withUnsafeBytes { formatter.append($0, milliseconds: 1_767_225_600_000 + Int64(index), to: &output) }
                }
            }
            let inputBytes = input.reduce(0) { $0 + $1.count + 1 }
            print(
                "formatter \(name): "
                    + String(
                        format: "%.2f M lines/s, %.0f MB/s of input (CPU)", Double(input.count) / seconds / 1e6,
                        Double(inputBytes) / seconds / 1e6))
            #expect(output.filter { $0 == 0x0A }.count == input.count)
        }
    }
}
