import Foundation
import StreamUpSink

/// Runs every measurement for the configured number of rounds and collects the raw values.
///
/// Per round, in this order, each client-vs-client step alternating which client goes first:
/// throughput (``BenchOptions/bytes``, also giving CPU per GB), a 1 GB stream for peak RSS,
/// latency at 1,000 and 10,000 lines/s (also giving spawn → first byte), the sink's ceiling,
/// and the sink's memory with 1, 100 and 1,000 slow streams. After the rounds, once per client,
/// the 10 GB peak-RSS stream (unless turned off, or predicted to take over 90 s).
///
/// Thread safety: used from the main thread only.
struct Benchmark {
    static let latencyRates = [1_000, 10_000]
    static let slowStreamCounts = [1, 100, 1_000]
    static let rssStreamBytes = 1_000_000_000
    static let bigStreamBytes = 10_000_000_000
    /// The 10 GB stream runs for a client only if its median throughput predicts at most this.
    static let bigStreamBudgetSeconds = 90.0

    let options: BenchOptions
    let binaries: Binaries

    func run() throws(BenchError) -> Results {
        Descriptors.raiseOpenFileLimit()
        let events = SinkEvents()
        var configuration = SinkConfiguration(host: "127.0.0.1", port: 0)
        configuration.hashBodies = false
        let sink: SinkServer
        do {
            sink = try SinkServer(configuration: configuration) { events.record($0) }
        } catch {
            throw BenchError("cannot start the in-process sink: \(error)")
        }
        sink.start()
        defer { sink.stop() }
        let url = sink.urlString
        Progress.log("sink (in-process, no hashing) at \(url); streamup: \(binaries.streamup); curl: \(binaries.curl)")

        var results = Results()
        let started = MonotonicClock.now()
        for round in 0..<options.rounds {
            let order = Client.order(forRound: round)
            let label = "round \(round + 1)/\(options.rounds)"
            for client in order {
                let result = try UploadRun.run(
                    client, binaries: binaries, url: url, bytes: options.bytes,
                    stallSeconds: options.stallSeconds, events: events)
                record(throughput: result, round: round, into: &results)
                Progress.log("\(label) \(client.rawValue) \(Report.bytes(options.bytes)): " + describe(result))
            }
            for client in order {
                let result = try UploadRun.run(
                    client, binaries: binaries, url: url, bytes: Self.rssStreamBytes,
                    stallSeconds: options.stallSeconds, events: events)
                record(rss: result, big: false, round: round, into: &results)
                Progress.log("\(label) \(client.rawValue) 1 GB (peak RSS): " + describe(result))
            }
            for rate in Self.latencyRates {
                for client in order {
                    let result = try LatencyRun.run(
                        client, binaries: binaries, rate: rate, seconds: options.latencySeconds,
                        stallSeconds: options.stallSeconds)
                    record(latency: result, round: round, into: &results)
                    Progress.log("\(label) \(client.rawValue) latency at \(rate) lines/s: " + describe(result))
                }
            }
            do {
                let rate = try SinkCeiling.measure(port: sink.port, bytes: options.bytes, events: events)
                results.sinkCeilingMBps.append(rate)
                Progress.log("\(label) sink ceiling: \(Report.number(rate)) MB/s")
            } catch {
                results.sinkFailures.append("round \(round + 1), sink ceiling: \(error)")
                Progress.log("\(label) sink ceiling failed: \(error)")
            }
            for count in Self.slowStreamCounts where count <= options.maxSlowStreams {
                do {
                    let memory = try SinkMemory.measure(streamup: binaries.streamup, connections: count)
                    results.sinkAddedKiB[count, default: []].append(Double(memory.addedKiB))
                    results.sinkPerConnectionKiB[count, default: []].append(memory.perConnectionKiB)
                    results.sinkBaselineKiB.append(Double(memory.baselineKiB))
                    Progress.log("\(label) sink with \(count) slow streams: +\(memory.addedKiB) KiB over \(memory.baselineKiB) KiB")
                } catch {
                    results.sinkFailures.append("round \(round + 1), \(count) slow streams: \(error)")
                    Progress.log("\(label) sink with \(count) slow streams failed: \(error)")
                }
            }
        }
        if options.big {
            for client in Client.allCases {
                // The 10 GB stream only where it fits the time budget, judged by this run's median.
                guard let rate = Summary(results[client].throughputMBps)?.median else {
                    results[client].notes.append("10 GB stream skipped: no throughput run of this client succeeded")
                    Progress.log("\(client.rawValue) 10 GB skipped: no successful throughput run to predict its duration")
                    continue
                }
                let predicted = Double(Self.bigStreamBytes) / 1e6 / rate
                guard predicted <= Self.bigStreamBudgetSeconds else {
                    results[client].notes.append("10 GB stream skipped: it would take about \(Int(predicted)) s at \(Int(rate)) MB/s")
                    Progress.log("\(client.rawValue) 10 GB skipped: predicted \(Int(predicted)) s")
                    continue
                }
                let result = try UploadRun.run(
                    client, binaries: binaries, url: url, bytes: Self.bigStreamBytes,
                    stallSeconds: options.stallSeconds, events: events)
                record(rss: result, big: true, round: nil, into: &results)
                Progress.log("\(client.rawValue) 10 GB (peak RSS): " + describe(result))
            }
        }
        results.elapsedSeconds = MonotonicClock.seconds(MonotonicClock.now() - started)
        return results
    }

    private func record(throughput result: UploadResult, round: Int, into results: inout Results) {
        results[result.client].runs += 1
        guard result.failure == nil else {
            results[result.client].failures.append("round \(round + 1), \(Report.bytes(result.bytes)) throughput: \(result.failure ?? "")")
            return
        }
        let gigabytes = Double(result.bytes) / 1e9
        results[result.client].throughputMBps.append(result.megabytesPerSecond)
        results[result.client].cpuSecondsPerGB.append(result.cpuSecondsPerGB)
        results[result.client].userSecondsPerGB.append(result.exit.userSeconds / gigabytes)
        results[result.client].systemSecondsPerGB.append(result.exit.systemSeconds / gigabytes)
    }

    private func record(rss result: UploadResult, big: Bool, round: Int?, into results: inout Results) {
        results[result.client].runs += 1
        guard result.failure == nil else {
            let when = round.map { "round \($0 + 1), " } ?? ""
            results[result.client].failures.append("\(when)\(Report.bytes(result.bytes)) peak-RSS stream: \(result.failure ?? "")")
            return
        }
        if big {
            results[result.client].rss10GBMiB.append(result.maxRSSMiB)
        } else {
            results[result.client].rss1GBMiB.append(result.maxRSSMiB)
        }
    }

    private func record(latency result: LatencyResult, round: Int, into results: inout Results) {
        results[result.client].runs += 1
        // Start-up is measured before any timed line, so it counts even if the run failed later.
        if let first = result.firstByteNanos {
            results[result.client].firstByteMs.append(Double(first) / 1e6)
        }
        guard result.failure == nil, let p50 = result.percentileMilliseconds(50),
              let p99 = result.percentileMilliseconds(99), let max = result.maxMilliseconds else {
            results[result.client].failures.append("round \(round + 1), latency at \(result.rate) lines/s: \(result.failure ?? "no lines")")
            return
        }
        results[result.client].latencyP50Ms[result.rate, default: []].append(p50)
        results[result.client].latencyP99Ms[result.rate, default: []].append(p99)
        results[result.client].latencyMaxMs[result.rate, default: []].append(max)
    }

    private func describe(_ result: UploadResult) -> String {
        if let failure = result.failure { return "FAILED: \(failure)" }
        return "\(Report.number(result.megabytesPerSecond)) MB/s, \(Report.number(result.cpuSecondsPerGB, digits: 2)) CPU s/GB, peak RSS \(Report.number(result.maxRSSMiB, digits: 1)) MiB"
    }

    private func describe(_ result: LatencyResult) -> String {
        if let failure = result.failure { return "FAILED: \(failure)" }
        let ms = { (value: Double?) in value.map { Report.number($0, digits: 2) } ?? "-" }
        let first = result.firstByteNanos.map { Report.number(Double($0) / 1e6, digits: 1) } ?? "-"
        return "\(result.latencies.count) lines, p50 \(ms(result.percentileMilliseconds(50))) ms, p99 \(ms(result.percentileMilliseconds(99))) ms, max \(ms(result.maxMilliseconds)) ms; first byte after \(first) ms"
    }
}
