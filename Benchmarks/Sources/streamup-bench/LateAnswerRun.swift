import Foundation
import StreamUpSink

/// One row of the late-answer step: streamup's acknowledged segments from a fast pipe
/// (`--records none`, POST: a PUT keeps one request out) into a sink that answers each request ``BenchOptions/answerDelayMilliseconds``
/// after its body ended, with the row's extra options.
///
/// The rows are the segment sizes times the windows: a new option to compare is one more entry
/// in ``segmentings`` or ``windows`` (each an argument list; an empty list is the default).
///
/// Thread safety: a value type.
struct LateAnswerCase: Sendable, Hashable {
    /// How the row is headed in the report.
    let title: String
    /// streamup's options besides `--records none URL`.
    let options: [String]

    /// The segment sizes compared: the default, and a receiver's 1 MiB request cap (Splunk HEC).
    static let segmentings: [[String]] = [[], ["--segment-bytes", "1MiB"]]
    /// The windows compared: the default (one request at a time) and several in flight.
    static let windows: [[String]] = [[], ["--max-in-flight", "8"]]

    static var all: [LateAnswerCase] {
        windows.flatMap { window in
            segmentings.map { segmenting in
                let options = segmenting + window
                return LateAnswerCase(title: options.isEmpty ? "defaults" : options.joined(separator: " "), options: options)
            }
        }
    }

    /// streamup's arguments against `url`.
    func arguments(url: String) -> [String] {
        ["--records", "none"] + options + [url]
    }

    /// The command as the report shows it.
    var displayCommand: String {
        (["streamup"] + arguments(url: "http://127.0.0.1:PORT/")).joined(separator: " ")
    }
}

/// Runs the late-answer step: its own in-process sink (no hashing, no output directory, the
/// answer delay injected with ``SinkFaults/answerDelay``), one upload per ``LateAnswerCase``.
///
/// Thread safety: used from the main thread only.
struct LateAnswerRun {
    /// streamup's default buffer (`--buffer-size`), the bound's numerator.
    static let bufferBytes = 8 << 20

    let sink: SinkServer
    let events: SinkEvents

    init(delayMilliseconds: Int) throws(BenchError) {
        let events = SinkEvents()
        var configuration = SinkConfiguration(host: "127.0.0.1", port: 0)
        configuration.hashBodies = false
        configuration.recentEventLimit = 0
        configuration.faults.answerDelay = .milliseconds(delayMilliseconds)
        do {
            sink = try SinkServer(configuration: configuration) { events.record($0) }
        } catch {
            throw BenchError("cannot start the late-answer sink: \(error)")
        }
        self.events = events
        sink.start()
    }

    func stop() {
        sink.stop()
    }

    /// One upload of `bytes` with `row`'s options.
    func run(_ row: LateAnswerCase, binaries: Binaries, bytes: Int, stallSeconds: Double) throws(BenchError) -> UploadRun.Outcome {
        try UploadRun.upload(
            binaries.streamup, row.arguments(url: sink.urlString), name: "late-answer", readsStdin: true, time: binaries.time,
            bytes: bytes, stallSeconds: stallSeconds, events: events)
    }

    /// The buffer's bound on throughput in MB/s: one buffer per answer delay.
    static func boundMBps(delayMilliseconds: Int) -> Double {
        Double(bufferBytes) / 1e6 / (Double(delayMilliseconds) / 1_000)
    }
}
