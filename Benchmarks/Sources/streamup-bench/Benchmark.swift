import Foundation
import StreamUpSink

/// Runs every measurement for the configured number of rounds and collects the raw values.
///
/// Per round, in this order, each step running its clients in the round's order (as listed in
/// even rounds, reversed in odd ones): streamup against a receiver that answers late (every
/// ``LateAnswerCase``; the only step with `--only late-answers`), throughput of a stream from a pipe (``BenchOptions/bytes``,
/// every ``Client``; also CPU per GB and peak RSS; the only step with `--only pipe`), latency at 1,000 and 10,000 lines/s (the
/// single request and curl; also spawn → first byte), the sink's ceiling, the sink's memory
/// with 1, 100 and 1,000 slow streams, the waiting runs (every ``WaitClient``), and the
/// log-shipping workload on 1 file and on 100 (every ``Shipper`` of each). After
/// the rounds, once per client, the 10 GB peak-RSS stream (unless turned off, or predicted to
/// take over 90 s).
///
/// Thread safety: used from the main thread only.
struct Benchmark {
    static let latencyRates = [1_000, 10_000]
    static let slowStreamCounts = [1, 100, 1_000]
    /// The log-shipping workload's numbers of files (the total rate is the same).
    static let shippingFileCounts = [1, 100]
    static let bigStreamBytes = 10_000_000_000
    /// The 10 GB stream runs for a client only if its median throughput predicts at most this.
    static let bigStreamBudgetSeconds = 90.0

    let options: BenchOptions
    let binaries: Binaries
    let syslogNG: SyslogNGVersion?
    /// The plugins the installed `fluent-bit` lacks (its column is then left out), or nil.
    let fluentBitLacks: String?

    func run() throws(BenchError) -> Results {
        Descriptors.raiseOpenFileLimit()
        let events = SinkEvents()
        var configuration = SinkConfiguration(host: "127.0.0.1", port: 0)
        configuration.hashBodies = false
        configuration.recentEventLimit = 0
        let sink: SinkServer
        do {
            sink = try SinkServer(configuration: configuration) { events.record($0) }
        } catch {
            throw BenchError("cannot start the in-process sink: \(error)")
        }
        sink.start()
        defer { sink.stop() }
        let shippingSink = options.shipping && options.runs(.logShipping) ? try LineCountingSink() : nil
        defer { shippingSink?.stop() }
        let url = sink.urlString
        Progress.log(
            "sink (in-process, no hashing) at \(url); streamup: \(binaries.streamup); curl: \(binaries.curl); syslog-ng: \(binaries.syslogNG ?? "not installed"); fluent-bit: \(binaries.fluentBit ?? "not installed")"
        )

        var results = Results()
        let started = MonotonicClock.now()
        let lateAnswers = try LateAnswerRun(delayMilliseconds: options.answerDelayMilliseconds)
        defer { lateAnswers.stop() }
        for round in 0..<options.rounds {
            let label = "round \(round + 1)/\(options.rounds)"
            if options.runs(.lateAnswers) {
                try measureLateAnswers(lateAnswers, round: round, label: label, into: &results)
            }
            if options.runs(.pipe) {
                for client in Client.order(Client.allCases, forRound: round) {
                    let result = try UploadRun.run(
                        client, binaries: binaries, url: url, bytes: options.bytes,
                        stallSeconds: options.stallSeconds, events: events)
                    record(throughput: result, round: round, into: &results)
                    Progress.log("\(label) \(client.rawValue) \(Report.bytes(options.bytes)): " + describe(result))
                }
            }
            if options.only == nil {
                try measureLatency(round: round, label: label, into: &results)
                measureSink(port: sink.port, events: events, round: round, label: label, into: &results)
                for client in Client.order(WaitClient.allCases, forRound: round) {
                    let result = try WaitRun.run(
                        client, binaries: binaries, requests: options.waitRequests, delay: options.waitDelaySeconds,
                        stallSeconds: options.stallSeconds)
                    record(wait: result, round: round, into: &results)
                    Progress.log("\(label) \(client.rawValue) waiting for \(options.waitRequests) slow answers: " + describe(result))
                }
            }
            if let shippingSink {
                try measureShipping(sink: shippingSink, round: round, label: label, into: &results)
            }
        }
        if options.big && options.runs(.pipe) {
            try measureBigStreams(url: url, events: events, into: &results)
        }
        results.elapsedSeconds = MonotonicClock.seconds(MonotonicClock.now() - started)
        return results
    }

    /// One run per client and rate of the line-latency step, in the round's order.
    private func measureLatency(round: Int, label: String, into results: inout Results) throws(BenchError) {
        for rate in Self.latencyRates {
            for client in Client.order(Client.latencyClients, forRound: round) {
                let result = try LatencyRun.run(
                    client, binaries: binaries, rate: rate, seconds: options.latencySeconds,
                    stallSeconds: options.stallSeconds)
                record(latency: result, round: round, into: &results)
                Progress.log("\(label) \(client.rawValue) latency at \(rate) lines/s: " + describe(result))
            }
        }
    }

    /// One run per row of the late-answer step, in the round's order.
    private func measureLateAnswers(_ step: LateAnswerRun, round: Int, label: String, into results: inout Results) throws(BenchError) {
        for row in Client.order(LateAnswerCase.all, forRound: round) {
            let outcome = try step.run(row, binaries: binaries, bytes: options.lateAnswerBytes, stallSeconds: options.stallSeconds)
            var measures = results[lateAnswer: row]
            measures.runs += 1
            let rate = Double(options.lateAnswerBytes) / 1e6 / outcome.seconds
            if let failure = outcome.failure {
                measures.failures.append("round \(round + 1): \(failure)")
            } else {
                measures.throughputMBps.append(rate)
                measures.rssMiB.append(Double(outcome.exit.maxRSSKiB) / 1024)
                measures.requests.append(Double(outcome.requests))
            }
            results[lateAnswer: row] = measures
            Progress.log(
                "\(label) answers \(options.answerDelayMilliseconds) ms late, \(row.title): "
                    + (outcome.failure
                        ?? "\(Report.number(rate)) MB/s, \(outcome.requests) requests, peak RSS \(Report.number(Double(outcome.exit.maxRSSKiB) / 1024, digits: 1)) MiB")
            )
        }
    }

    /// The sink's ceiling and its memory with slow streams.
    private func measureSink(port: UInt16, events: SinkEvents, round: Int, label: String, into results: inout Results) {
        do {
            let rate = try SinkCeiling.measure(port: port, bytes: options.bytes, events: events)
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

    /// One log-shipping run per shipper and number of files, in the round's order.
    private func measureShipping(sink: LineCountingSink, round: Int, label: String, into results: inout Results) throws(BenchError) {
        for files in Self.shippingFileCounts {
            for shipper in Client.order(Shipper.compared(files: files), forRound: round) {
                if let missing = missing(shipper) {
                    if round == 0 { results[shipper: shipper, files: files].notes.append("not run: \(missing)") }
                    continue
                }
                let result = try ShippingRun.run(
                    shipper, files: files, binaries: binaries, syslogNG: syslogNG, sink: sink, rate: options.logRate,
                    seconds: options.logSeconds, stallSeconds: options.stallSeconds, round: round)
                record(shipping: result, round: round, into: &results)
                Progress.log("\(label) \(shipper.rawValue) log shipping, \(files) file\(files == 1 ? "" : "s"): " + describe(result))
            }
        }
    }

    /// Why a shipper cannot run here, or nil.
    private func missing(_ shipper: Shipper) -> String? {
        switch shipper {
        case .syslogNG where binaries.syslogNG == nil || syslogNG == nil:
            "syslog-ng is not installed (Debian: apt-get install syslog-ng-core syslog-ng-mod-http)"
        case .fluentBit where binaries.fluentBit == nil:
            "no `fluent-bit` binary on PATH (it is not in Debian; build it from its public source to get this column)"
        case .fluentBit where fluentBitLacks != nil:
            "the `fluent-bit` on PATH (\(binaries.fluentBit ?? "")) was built without \(fluentBitLacks ?? "")"
        default:
            nil
        }
    }

    /// After the rounds: the 10 GB stream once per client, where it fits the time budget.
    private func measureBigStreams(url: String, events: SinkEvents, into results: inout Results) throws(BenchError) {
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
            record(big: result, into: &results)
            Progress.log("\(client.rawValue) 10 GB (peak RSS): " + describe(result))
        }
    }
}
