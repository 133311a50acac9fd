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
        var measures = results[shipper: result.shipper, files: result.files]
        defer { results[shipper: result.shipper, files: result.files] = measures }
        measures.runs += 1
        // The writer's pace is the workload's, whatever the shipper did.
        if result.writer.lines > 0 {
            measures.writerLinesPerSecond.append(result.writer.linesPerSecond(rate: options.logRate))
            measures.writerMaxLagMs.append(Double(result.writer.maxLagNanos) / 1e6)
        }
        guard result.failure == nil, let p50 = result.latencyMilliseconds(50), let p99 = result.latencyMilliseconds(99) else {
            measures.failures.append("round \(round + 1), log shipping: \(result.failure ?? "no line arrived")")
            return
        }
        measures.cpuSeconds.append(result.cpuSeconds)
        measures.userSeconds.append(result.userSeconds)
        measures.systemSeconds.append(result.systemSeconds)
        measures.cpuMicrosecondsPerLine.append(result.cpuMicrosecondsPerLine)
        measures.latencyP50Ms.append(p50)
        measures.latencyP99Ms.append(p99)
        measures.rssMiB.append(result.maxRSSMiB)
        measures.linesDelivered.append(Double(result.counts.distinct))
        measures.requests.append(Double(result.counts.requests))
    }

    func record(wait result: WaitResult, round: Int, into results: inout Results) {
        results[wait: result.client].runs += 1
        guard result.failure == nil else {
            results[wait: result.client].failures.append("round \(round + 1): \(result.failure ?? "")")
            return
        }
        results[wait: result.client].cpuSeconds.append(result.exit.cpuSeconds)
        results[wait: result.client].userSeconds.append(result.exit.userSeconds)
        results[wait: result.client].systemSeconds.append(result.exit.systemSeconds)
        results[wait: result.client].wallSeconds.append(result.seconds)
    }

    func describe(_ result: WaitResult) -> String {
        if let failure = result.failure { return "FAILED: \(failure)" }
        return
            "CPU \(Report.number(result.exit.cpuSeconds, digits: 2)) s (user \(Report.number(result.exit.userSeconds, digits: 2)), sys \(Report.number(result.exit.systemSeconds, digits: 2))) in \(Report.number(result.seconds, digits: 1)) s"
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
        let p50 = result.latencyMilliseconds(50).map { Report.number($0, digits: 0) } ?? "-"
        return
            "CPU \(Report.number(result.cpuSeconds, digits: 2)) s\(cpu) (\(Report.number(result.cpuMicrosecondsPerLine, digits: 1)) µs/line), p50 line latency \(p50) ms, peak RSS \(Report.number(result.maxRSSMiB, digits: 1)) MiB, \(result.counts.distinct) of \(writer.lines) lines in \(result.counts.requests) request\(result.counts.requests == 1 ? "" : "s"); \(pace)"
    }
}
