/// The report's latency and sink tables.
///
/// Thread safety: stateless.
extension Report {
    static func latencySection(_ results: Results, options: BenchOptions) -> [String] {
        var lines: [String] = []
        lines.append("#### Line latency: streamup beside curl")
        lines.append("")
        lines.append(
            "- Clients: `\(Client.segments.latencyDisplayCommand)` (the default: acknowledged segments of whole lines, so the segments' lines are timed across all their requests), `\(Client.single.latencyDisplayCommand)` (one request) and `\(Client.curl.latencyDisplayCommand)`."
        )
        lines.append(
            "- Latency: 100-byte lines written one `write(2)` each into the client's stdin at a steady rate for \(number(options.latencySeconds, digits: 0)) s, each stamped with `CLOCK_MONOTONIC` ns when written, timed on arrival at a minimal HTTP/1.1 receiver in the bench (the sink has no per-chunk hook; this one splits bodies into lines as bytes arrive, answers each request 200 and keeps the connection). First byte: a line is already in the pipe at spawn. A run counts only if every line arrived once and every request ended."
        )
        lines.append("")
        let clients = Client.latencyClients
        var table = MarkdownTable(["Measure"] + clients.map(\.title) + ["segments / single", "single / curl"])
        func row(_ title: String, digits: Int, _ values: (Results.ClientMeasures) -> [Double]) {
            table.add(
                [title] + clients.map { MarkdownTable.cell(values(results[$0]), digits: digits) } + [
                    MarkdownTable.ratio(values(results[.segments]), values(results[.single])),
                    MarkdownTable.ratio(values(results[.single]), values(results[.curl])),
                ])
        }
        for rate in Benchmark.latencyRates {
            let label = grouped(rate)
            row("Line latency p50 at \(label) lines/s (ms)", digits: 2) { $0.latencyP50Ms[rate] ?? [] }
            row("Line latency p99 at \(label) lines/s (ms)", digits: 2) { $0.latencyP99Ms[rate] ?? [] }
            row("Line latency max at \(label) lines/s (ms)", digits: 2) { $0.latencyMaxMs[rate] ?? [] }
        }
        row("Spawn → first body byte at the receiver (ms; every latency run, also ones that failed later)", digits: 1) { $0.firstByteMs }
        table.add(
            ["Latency runs that did not count (listed below)"]
                + clients.map { "\(results[$0].latencyFailures.count) of \(results[$0].latencyRuns)" } + ["—", "—"])
        lines += table.lines
        lines += notesAndFailures(clients.map { ($0.title, [], results[$0].latencyFailures) })
        return lines
    }

    static func sinkSection(_ results: Results, options: BenchOptions) -> [String] {
        var lines: [String] = []
        lines.append("#### The sink")
        lines.append("")
        lines.append(
            "- Memory: `streamup \(SinkMemory.arguments.joined(separator: " "))` as a child; N raw connections each send a chunked PUT head and three 4-byte chunks 100 ms apart and stay open; VmRSS from `/proc/PID/status` minus the same process's VmRSS before any connection."
        )
        lines.append("- Ceiling: a raw sender in the bench (one `send` per 1 MiB chunk of a prebuilt chunked body) into the in-process sink.")
        lines.append("")
        var table = MarkdownTable(["Measure", "streamup sink"])
        table.add(["RSS with no connection (MiB)", cell(Summary(results.sinkBaselineKiB.map { $0 / 1024 }), digits: 1)])
        for count in Benchmark.slowStreamCounts where count <= options.maxSlowStreams {
            let total = Summary(results.sinkAddedKiB[count] ?? [])
            let each = Summary(results.sinkPerConnectionKiB[count] ?? [])
            table.add([
                "RSS added by \(grouped(count)) slow stream\(count == 1 ? "" : "s"): total KiB; per connection KiB",
                "\(cell(total, digits: 0)); \(cell(each, digits: 1))",
            ])
        }
        table.add(["Ceiling: raw sender, 1 MiB chunks, \(bytes(options.bytes)) (MB/s)", cell(Summary(results.sinkCeilingMBps), digits: 0)])
        lines += table.lines
        if !results.sinkFailures.isEmpty {
            lines.append("")
            lines.append("Sink measurements that failed:")
            lines += results.sinkFailures.map { "- \($0)" }
        }
        return lines
    }
}
