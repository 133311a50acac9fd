import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import StreamUp
import StreamUpSink
import StreamUpTestSupport
import Testing

extension InProcessUploads {
/// Not a test: the measurement behind README's "An app's own requests beside an emitter".
/// Runs only with `STREAMUP_MEASURE=1`:
///
///     STREAMUP_MEASURE=1 swift test --skip-build --filter AppStallMeasurement
///
/// An app's own `URLSession.shared` GETs to a local server, one every 20 ms for 5 s, timed each,
/// with no emitter, with an idle one (one event a second, default segments) and with a busy one
/// (1,000 events a second), all in this process; prints p50 and p90. Nothing is asserted.
@Suite struct AppStallMeasurement {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["STREAMUP_MEASURE"] != nil))
    func appRequestsBesideAnEmitter() async throws {
        try await SinkServer.withRunning(SinkConfiguration()) { receiver in
            try await SinkServer.withRunning(SinkConfiguration()) { app in
                let url = app.url.appendingPathComponent("health")
                print("app GETs, none:          " + describe(try await timeGets(url)))
                for (label, perSecond) in [("idle (1 event/s)", 1), ("busy (1,000 events/s)", 1_000)] {
                    let emitter = try TelemetryEmitter(UploadConfiguration(url: receiver.url), delivery: ReliableUploader.Options())
                    emitter.start()
                    let emitting = Task {
                        var index = 0
                        let start = ContinuousClock.now
                        while !Task.isCancelled {
                            index += 1
                            try await emitter.emit(["index": index])
                            try await Task.sleep(until: start + .seconds(Double(index) / Double(perSecond)), clock: .continuous)
                        }
                    }
                    try await Task.sleep(for: .milliseconds(1500))  // let segments get going
                    print("app GETs, \(label): " + describe(try await timeGets(url)))
                    emitting.cancel()
                    _ = await emitting.result
                    _ = try await emitter.finish()
                }
            }
        }
    }

    private func timeGets(_ url: URL) async throws -> [Double] {
        var times: [Double] = []
        let end = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < end {
            let start = ContinuousClock.now
            _ = try await get(url)
            times.append((ContinuousClock.now - start).seconds * 1000)
            try await Task.sleep(for: .milliseconds(20))
        }
        return times
    }

    private func describe(_ times: [Double]) -> String {
        let sorted = times.sorted()
        let pick = { (q: Double) in sorted[min(sorted.count - 1, Int(q * Double(sorted.count)))] }
        return String(format: "n %d, p50 %.1f ms, p90 %.1f ms, max %.1f ms", sorted.count, pick(0.5), pick(0.9), sorted.last ?? 0)
    }

    private func get(_ url: URL) async throws -> Int {
        try await withCheckedThrowingContinuation { continuation in
            URLSession.shared.dataTask(with: url) { _, response, error in
                if let error { return continuation.resume(throwing: error) }
                continuation.resume(returning: (response as? HTTPURLResponse)?.statusCode ?? 0)
            }.resume()
        }
    }
}
}

private extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
