/// Turning one run's result into the values ``Results`` collects, and into a progress line.
///
/// Thread safety: used from the main thread only, like ``Benchmark``.
extension Benchmark {
    func record(throughput result: UploadResult, round: Int, into results: inout Results) {
        results[result.client].pipeRuns += 1
        guard result.failure == nil else {
            results[result.client].pipeFailures.append("round \(round + 1), \(Report.bytes(result.bytes)) throughput: \(result.failure ?? "")")
            return
        }
        let gigabytes = Double(result.bytes) / 1e9
        results[result.client].throughputMBps.append(result.megabytesPerSecond)
        results[result.client].cpuSecondsPerGB.append(result.cpuSecondsPerGB)
        results[result.client].userSecondsPerGB.append(result.exit.userSeconds / gigabytes)
        results[result.client].systemSecondsPerGB.append(result.exit.systemSeconds / gigabytes)
        results[result.client].rssMiB.append(result.maxRSSMiB)
        results[result.client].requests.append(Double(result.requests))
    }

    func record(big result: UploadResult, into results: inout Results) {
        results[result.client].pipeRuns += 1
        guard result.failure == nil else {
            results[result.client].pipeFailures.append("\(Report.bytes(result.bytes)) peak-RSS stream: \(result.failure ?? "")")
            return
        }
        results[result.client].rss10GBMiB.append(result.maxRSSMiB)
    }

    func record(latency result: LatencyResult, round: Int, into results: inout Results) {
        results[result.client].latencyRuns += 1
        // Start-up is measured before any timed line, so it counts even if the run failed later.
        if let first = result.firstByteNanos {
            results[result.client].firstByteMs.append(Double(first) / 1e6)
        }
        guard result.failure == nil, let p50 = result.percentileMilliseconds(50),
            let p99 = result.percentileMilliseconds(99), let max = result.maxMilliseconds
        else {
            results[result.client].latencyFailures.append("round \(round + 1), latency at \(result.rate) lines/s: \(result.failure ?? "no lines")")
            return
        }
        results[result.client].latencyP50Ms[result.rate, default: []].append(p50)
        results[result.client].latencyP99Ms[result.rate, default: []].append(p99)
        results[result.client].latencyMaxMs[result.rate, default: []].append(max)
    }

    func record(shipping result: ShippingResult, round: Int, into results: inout Results) {
        results[shipper: result.shipper].runs += 1
        // The writer's pace is the workload's, whatever the shipper did.
        if result.writer.lines > 0 {
            results[shipper: result.shipper].writerLinesPerSecond.append(result.writer.linesPerSecond(rate: options.logRate))
            results[shipper: result.shipper].writerMaxLagMs.append(Double(result.writer.maxLagNanos) / 1e6)
        }
        guard result.failure == nil else {
            results[shipper: result.shipper].failures.append("round \(round + 1), log shipping: \(result.failure ?? "")")
            return
        }
        results[shipper: result.shipper].cpuSeconds.append(result.cpuSeconds)
        results[shipper: result.shipper].userSeconds.append(result.userSeconds)
        results[shipper: result.shipper].systemSeconds.append(result.systemSeconds)
        results[shipper: result.shipper].rssMiB.append(result.maxRSSMiB)
        results[shipper: result.shipper].linesDelivered.append(Double(result.counts.distinct))
        results[shipper: result.shipper].requests.append(Double(result.counts.requests))
    }

    func describe(_ result: UploadResult) -> String {
        if let failure = result.failure { return "FAILED: \(failure)" }
        return
            "\(Report.number(result.megabytesPerSecond)) MB/s, \(Report.number(result.cpuSecondsPerGB, digits: 2)) CPU s/GB, peak RSS \(Report.number(result.maxRSSMiB, digits: 1)) MiB, \(result.requests) request\(result.requests == 1 ? "" : "s")"
    }

    func describe(_ result: LatencyResult) -> String {
        if let failure = result.failure { return "FAILED: \(failure)" }
        let ms = { (value: Double?) in value.map { Report.number($0, digits: 2) } ?? "-" }
        let first = result.firstByteNanos.map { Report.number(Double($0) / 1e6, digits: 1) } ?? "-"
        return
            "\(result.latencies.count) lines, p50 \(ms(result.percentileMilliseconds(50))) ms, p99 \(ms(result.percentileMilliseconds(99))) ms, max \(ms(result.maxMilliseconds)) ms; first byte after \(first) ms"
    }

    func describe(_ result: ShippingResult) -> String {
        let writer = result.writer
        let pace =
            "writer \(Report.number(writer.linesPerSecond(rate: options.logRate))) lines/s in \(writer.writes) writes, worst lag \(Report.number(Double(writer.maxLagNanos) / 1e6, digits: 1)) ms"
        if let failure = result.failure { return "FAILED: \(failure); \(pace)" }
        let cpu = result.exits.count == 1 ? "" : " (" + result.exits.map { Report.number($0.cpuSeconds, digits: 2) }.joined(separator: " + ") + ")"
        return
            "CPU \(Report.number(result.cpuSeconds, digits: 2)) s\(cpu), peak RSS \(Report.number(result.maxRSSMiB, digits: 1)) MiB, \(result.counts.distinct) of \(writer.lines) lines in \(result.counts.requests) request\(result.counts.requests == 1 ? "" : "s"); \(pace)"
    }
}
