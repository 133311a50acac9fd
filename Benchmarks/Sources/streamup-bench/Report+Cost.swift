/// The report's waiting table and the summary of the cost targets: each cost of streamup as a ratio
/// beside the peers, from the tables of the same run.
///
/// Thread safety: stateless.
extension Report {
    static func waitSection(_ results: Results, options: BenchOptions) -> [String] {
        let requests = options.waitRequests
        let delay = number(options.waitDelaySeconds, digits: 0)
        var lines: [String] = []
        lines.append("#### Waiting for slow answers: \(requests) small POST\(requests == 1 ? "" : "s"), each answered \(delay) s after it ended")
        lines.append("")
        lines.append(
            "- Receiver: a minimal HTTP/1.1 server in the bench that reads each request whole and answers `200` (body `ok`) \(delay) s after its end, keeping the connection: nearly all of a run is waiting, so the client's CPU is what waiting costs it (DesignNotes, \"Waiting for an answer spins a core\")."
        )
        lines.append("- Clients, one request after another:")
        lines.append(
            "  - streamup: `\(WaitClient.streamup.displayCommand(requests: requests))`, the bench writing one line into its stdin after each answer, so each line is a small segment of its own;"
        )
        lines.append(
            "  - bare URLSession program: `\(WaitClient.bare.displayCommand(requests: requests))`, the bench itself as a child: `URLSession.uploadTask(with:from:)` of the same 22 bytes per request on one ephemeral session, no streamup code;"
        )
        lines.append("  - curl: `\(WaitClient.curl.displayCommand(requests: requests))` (one connection).")
        lines.append("- CPU (user+sys) of the client over its whole life (GNU time); wall time from spawn to exit.")
        lines.append("")
        let clients = WaitClient.allCases
        var table = MarkdownTable(["Measure"] + clients.map(\.title) + ["streamup / bare", "streamup / curl"])
        func row(_ title: String, digits: Int, _ values: (Results.WaitMeasures) -> [Double]) {
            table.add(
                [title] + clients.map { MarkdownTable.cell(values(results[wait: $0]), digits: digits) } + [
                    MarkdownTable.ratio(values(results[wait: .streamup]), values(results[wait: .bare])),
                    MarkdownTable.ratio(values(results[wait: .streamup]), values(results[wait: .curl])),
                ])
        }
        row("CPU of the client, user+sys (s)", digits: 2) { $0.cpuSeconds }
        row("  of which user (s)", digits: 2) { $0.userSeconds }
        row("  of which sys (s)", digits: 2) { $0.systemSeconds }
        row("Wall time (s)", digits: 1) { $0.wallSeconds }
        table.add(["Runs that did not count (listed below)"] + clients.map { "\(results[wait: $0].failures.count) of \(results[wait: $0].runs)" } + ["—", "—"])
        lines += table.lines
        lines += notesAndFailures(clients.map { ($0.title, [], results[wait: $0].failures) })
        return lines
    }

    /// The costs, each beside its peers, with their targets (Benchmarks/RESULTS.md, Targets).
    static func costSection(_ results: Results, options: BenchOptions) -> [String] {
        var lines: [String] = []
        lines.append("#### Cost beside the peers, from the tables above")
        lines.append("")
        var table = MarkdownTable(["Cost", "streamup", "peer", "peer's value", "streamup / peer", "target"])
        func add(_ cost: String, _ ours: [Double], _ peer: String, _ theirs: [Double], digits: Int, target: String = "—") {
            table.add([
                cost, MarkdownTable.cell(ours, digits: digits), peer, MarkdownTable.cell(theirs, digits: digits), MarkdownTable.ratio(ours, theirs), target,
            ])
        }
        func ratioTarget(_ ours: [Double], _ theirs: [Double], atMost limit: Double) -> String {
            "≤ \(number(limit, digits: 1))×: " + verdict(ratioOfMedians(ours, theirs)) { $0 <= limit }
        }
        func valueTarget(_ ours: [Double], atMost limit: Double, _ unit: String) -> String {
            "≤ \(number(limit, digits: 0)) \(unit): " + verdict(Summary(ours)?.median) { $0 <= limit }
        }

        let delay = number(options.waitDelaySeconds, digits: 0)
        let waiting =
            options.waitRequests == 1
            ? "CPU while a small POST waits \(delay) s for its answer (s)"
            : "CPU while \(options.waitRequests) small POSTs each wait \(delay) s for their answer (s)"
        let streamupWait = results[wait: .streamup].cpuSeconds
        add(waiting, streamupWait, "bare URLSession program", results[wait: .bare].cpuSeconds, digits: 2, target: "as little as the platform allows")
        add(waiting, streamupWait, "curl", results[wait: .curl].cpuSeconds, digits: 2)

        if options.shipping {
            for files in Benchmark.shippingFileCounts {
                let ours = results[shipper: .streamup, files: files]
                let syslogNG = results[shipper: .syslogNG, files: files]
                let fluentBit = results[shipper: .fluentBit, files: files]
                let workload = "\(files == 1 ? "1 file" : "\(files) files"), \(grouped(options.logRate)) lines/s"
                add(
                    "CPU per shipped line, \(workload) (µs)", ours.cpuMicrosecondsPerLine, "syslog-ng file() → http()", syslogNG.cpuMicrosecondsPerLine,
                    digits: 2, target: ratioTarget(ours.cpuMicrosecondsPerLine, syslogNG.cpuMicrosecondsPerLine, atMost: 0.5))
                add(
                    "CPU per shipped line, \(workload) (µs)", ours.cpuMicrosecondsPerLine, "Fluent Bit tail → http", fluentBit.cpuMicrosecondsPerLine,
                    digits: 2, target: ratioTarget(ours.cpuMicrosecondsPerLine, fluentBit.cpuMicrosecondsPerLine, atMost: 1))
                let latency = "Line → receiver p50, \(workload) (ms)"
                let segment = valueTarget(ours.latencyP50Ms, atMost: 1_000, "ms (the segment time)")
                add(latency, ours.latencyP50Ms, "syslog-ng", syslogNG.latencyP50Ms, digits: 0, target: segment)
                add(latency, ours.latencyP50Ms, "Fluent Bit", fluentBit.latencyP50Ms, digits: 0)
                let memory = "Peak RSS, default mode, \(workload) (MiB)"
                add(memory, ours.rssMiB, "syslog-ng", syslogNG.rssMiB, digits: 1, target: valueTarget(ours.rssMiB, atMost: 30, "MiB"))
                add(memory, ours.rssMiB, "Fluent Bit", fluentBit.rssMiB, digits: 1)
            }
        }

        let memory = "Peak RSS, default mode, a \(bytes(options.bytes)) pipe (MiB)"
        let ours = results[.segments].rssMiB
        add(memory, ours, "bare URLSession program", results[.bare].rssMiB, digits: 1, target: valueTarget(ours, atMost: 30, "MiB"))
        add(memory, ours, "curl -T -", results[.curl].rssMiB, digits: 1)
        lines += table.lines
        lines.append("")
        lines.append(
            "A peer's cell is `—` when it was not run (see the notes under its table); a ratio is `—` when the peer's median is 0 (curl's CPU while waiting rounds to 0.00 s)."
        )
        return lines
    }
}
