import Foundation
import StreamUp
import StreamUpSink
import StreamUpTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension InProcessUploads {
    /// Not a test: the measurement behind Benchmarks/RESULTS.md, "Segments as complete bodies".
    /// Runs only with `STREAMUP_MEASURE=1`:
    ///
    ///     STREAMUP_MEASURE=1 swift test --skip-build --filter AppStallMeasurement
    ///
    /// An app's own `URLSession.shared` GETs to a local server, one started every 20 ms for 5 s (not
    /// waiting for the one before), timed each,
    /// with no emitter, with an idle one (one event a second, default segments), with a busy one
    /// (1,000 events a second) and with a heartbeat (a beat a second), all in this process; prints p50 and p90. Nothing is asserted.
    @Suite struct AppStallMeasurement {
        @Test(.enabled(if: ProcessInfo.processInfo.environment["STREAMUP_MEASURE"] != nil))
        func appRequestsBesideAnEmitter() async throws {
            try await SinkServer.withRunning(SinkConfiguration()) { receiver in
                try await SinkServer.withRunning(SinkConfiguration()) { app in
                    let url = app.url.appendingPathComponent("health")
                    print("app GETs, none:          " + describe(try await timeGets(url)))
                    for (label, perSecond) in [("idle (1 event/s)", 1), ("busy (1,000 events/s)", 1_000)] {
                        let emitter = try TelemetryEmitter(UploadConfiguration(url: receiver.url))
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
                    // A heartbeat monitor in the app's process: a beat a second on the emitter's stream.
                    let monitor = try TelemetryEmitter(UploadConfiguration(url: receiver.url))
                    monitor.startHeartbeat(every: .seconds(1))
                    try await Task.sleep(for: .milliseconds(1500))
                    print("app GETs, heartbeat (1/s):  " + describe(try await timeGets(url)))
                    _ = try await monitor.finish()
                }
            }
        }

        /// Starts a GET every 20 ms for 5 s, whether or not the earlier ones were answered (as an
        /// app's requests come), and returns how long each took.
        private func timeGets(_ url: URL) async throws -> [Double] {
            try await withThrowingTaskGroup(of: Double.self) { group in
                let start = ContinuousClock.now
                for index in 0..<250 {
                    try await Task.sleep(until: start + .milliseconds(20 * index), clock: .continuous)
                    group.addTask {
                        let sent = ContinuousClock.now
                        _ = try await Self.get(url)
                        return (ContinuousClock.now - sent).seconds * 1000
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }

        private func describe(_ times: [Double]) -> String {
            let sorted = times.sorted()
            let pick = { (q: Double) in sorted[min(sorted.count - 1, Int(q * Double(sorted.count)))] }
            return String(format: "n %d, p50 %.1f ms, p90 %.1f ms, max %.1f ms", sorted.count, pick(0.5), pick(0.9), sorted.last ?? 0)
        }

        private static func get(_ url: URL) async throws -> Int {
            try await withCheckedThrowingContinuation { continuation in
                URLSession.shared.dataTask(with: url) { _, response, error in
                    if let error { return continuation.resume(throwing: error) }
                    continuation.resume(returning: (response as? HTTPURLResponse)?.statusCode ?? 0)
                }.resume()
            }
        }
    }
}

extension Duration {
    fileprivate var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
