import Foundation
import StreamUp
import StreamUpTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension InProcessUploads {
    /// Not a test: what an emitter costs while its receiver is down, the measurement behind the
    /// emitter's 1 s reconnect bound (Documentation/Library.md, "The emitter on bad days").
    /// Runs only with `STREAMUP_MEASURE=1` (`STREAMUP_MEASURE_SECONDS`: how long each case waits,
    /// default 60):
    ///
    ///     STREAMUP_MEASURE=1 swift test --skip-build --filter EmitterOutageMeasurement
    ///
    /// Each case emits its records into an emitter whose receiver is down (nothing listens on
    /// the port), then waits; it prints the process's CPU time during the wait, the attempts
    /// made, and the events an app would log (all of them, and the notices). Nothing is asserted.
    @Suite struct EmitterOutageMeasurement {
        @Test(.enabled(if: ProcessInfo.processInfo.environment["STREAMUP_MEASURE"] != nil))
        func costWhileTheReceiverIsDown() async throws {
            let seconds = Int(ProcessInfo.processInfo.environment["STREAMUP_MEASURE_SECONDS"] ?? "") ?? 60
            let cases: [(label: String, reconnect: Duration?, gzip: Bool, records: Int)] = [
                ("reconnect within 1 s (default), 120 KB held", nil, false, 1_000),
                ("backoff up to 30 s, 120 KB held", .seconds(30), false, 1_000),
                ("reconnect within 1 s, 3.6 MB held, gzip", nil, true, 30_000),
                ("backoff up to 30 s, 3.6 MB held, gzip", .seconds(30), true, 30_000),
            ]
            print("receiver down for \(seconds) s: CPU s, attempts, events, notices")
            for (label, reconnect, gzip, records) in cases {
                let events = EventRecorder<UploadEvent>()
                var configuration = UploadConfiguration(url: URL(string: "http://127.0.0.1:\(unusedLocalPort())/ingest")!)
                configuration.body.gzip = gzip
                var options = TelemetryEmitter.Options()
                options.delivery.retry.maxReconnectDelay = reconnect
                let emitter = try TelemetryEmitter(configuration, options: options, onEvent: events.handler)
                let note = String(repeating: "o", count: 85)
                for index in 0..<records { emitter.tryEmit(Reading(task: 0, index: index, note: note)) }
                let before = Self.cpuSeconds()
                try await Task.sleep(for: .seconds(seconds))  // the workload: time passing with the receiver down
                let cpu = Self.cpuSeconds() - before
                let all = events.all
                let attempts = all.filter { $0.kind == .requestStarted }.count
                let logged = all.filter { $0.kind != .requestStarted && $0.kind != .responseReceived }.count
                let notices = all.filter(\.isNotice).count
                print(String(format: "%@: %.3f CPU s, %d attempts, %d events, %d notices", label, cpu, attempts, logged, notices))
                emitter.cancel()
                _ = try? await emitter.finish()
            }
        }

        /// User and system CPU time of this process so far.
        private static func cpuSeconds() -> Double {
            var usage = rusage()
            getrusage(RUSAGE_SELF.rawValue, &usage)
            func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
            return seconds(usage.ru_utime) + seconds(usage.ru_stime)
        }
    }
}
