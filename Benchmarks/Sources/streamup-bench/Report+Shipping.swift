/// The report's log-shipping table.
///
/// Thread safety: stateless.
extension Report {
    static func shippingSection(_ results: Results, options: BenchOptions, machine: Machine) -> [String] {
        let rate = grouped(options.logRate)
        let total = grouped(Int(Double(options.logRate) * options.logSeconds))
        var lines: [String] = []
        lines.append("#### Log shipping: a file growing at \(rate) lines/s for \(number(options.logSeconds, digits: 0)) s")
        lines.append("")
        lines.append(
            "- Writer: a bench thread appends 100-byte lines (`seq=` and a 10-digit number, filler, `\\n`) to FILE (`O_APPEND`) on a steady schedule: it sleeps until the next line is due and writes every line then due in one `write(2)` (one line per call while it keeps up); \(total) lines per run. Its achieved rate and worst lag behind schedule are in the table."
        )
        lines.append("- Shippers, each started on the empty FILE in a fresh temporary directory before the first line, following it from its start:")
        lines.append("  - \(Shipper.streamup.title): `\(Shipper.streamup.displayCommand)`;")
        lines.append("  - \(Shipper.single.title): `\(Shipper.single.displayCommand)`;")
        lines.append("  - `\(Shipper.tailCurl.displayCommand)`: the CPU and peak RSS of both processes, added;")
        lines.append(
            "  - \(machine.syslogNG.map { "syslog-ng \($0.release)" } ?? "syslog-ng"), run by hand (not as a service): `\(Shipper.syslogNG.displayCommand)`, with DIR/syslog-ng.conf:"
        )
        lines.append("")
        lines.append("    ```")
        lines += SyslogNGSetup.configuration(version: machine.syslogNG?.configVersion ?? "VERSION", file: "FILE", url: "URL")
            .split(separator: "\n").map { "    \($0)" }
        lines.append("    ```")
        lines.append("")
        lines.append(
            "    (`log-iw-size(10000)`: with flow control, the source's default window of 100 messages would cap every batch at 100 lines; `flags(flow-control)`: the source waits for the destination instead of dropping lines.)"
        )
        lines.append(
            "- Receiver: a minimal HTTP/1.1 server in the bench (keep-alive, chunked or `Content-Length` bodies, every request answered 200) that counts the distinct `seq=` numbers *as the bytes arrive*, also inside a request that has not ended (the sink reports a request only at its end). A run counts only if every line arrived, once, and every request ended."
        )
        lines.append(
            "- End of a run: once every line has arrived, the shipper gets SIGTERM (`tail | curl`: `tail` does, and `curl` ends its request at the end of its input) and exits; CPU seconds (user+sys) and peak RSS are each process's own (GNU time), over its whole life from spawn to exit."
        )
        lines.append("")

        let shippers = Shipper.allCases
        var table = MarkdownTable(["Measure"] + shippers.map(\.title) + ["default / --single-request"])
        func row(_ title: String, digits: Int, _ values: (Results.ShipperMeasures) -> [Double]) {
            table.add(
                [title] + shippers.map { MarkdownTable.cell(values(results[shipper: $0]), digits: digits) }
                    + [MarkdownTable.ratio(values(results[shipper: .streamup]), values(results[shipper: .single]))])
        }
        row("CPU of the shipper over the run, user+sys (s)", digits: 2) { $0.cpuSeconds }
        row("  of which user (s)", digits: 2) { $0.userSeconds }
        row("  of which sys (s)", digits: 2) { $0.systemSeconds }
        row("Peak RSS of the shipper (MiB)", digits: 1) { $0.rssMiB }
        table.add(["Lines that arrived, each once (of \(total))"] + shippers.map { MarkdownTable.cell(results[shipper: $0].linesDelivered, digits: 0) } + ["—"])
        table.add(["Requests the receiver got per run"] + shippers.map { MarkdownTable.cell(results[shipper: $0].requests, digits: 0) } + ["—"])
        table.add(["Writer: lines/s achieved (every run)"] + shippers.map { MarkdownTable.cell(results[shipper: $0].writerLinesPerSecond, digits: 0) } + ["—"])
        table.add(
            ["Writer: worst lag behind schedule (ms, every run)"] + shippers.map { MarkdownTable.cell(results[shipper: $0].writerMaxLagMs, digits: 1) } + ["—"])
        table.add(
            ["Runs that did not count (stalled, failed or lines missing; listed below)"]
                + shippers.map { "\(results[shipper: $0].failures.count) of \(results[shipper: $0].runs)" } + ["—"])
        lines += table.lines

        let cpu = ratioOfMedians(results[shipper: .streamup].cpuSeconds, results[shipper: .single].cpuSeconds)
        lines.append("")
        lines.append(
            "Target (issue 9): CPU of the default (segments) ≤ 1.1× `--single-request`'s: \(cpu.map { number($0, digits: 2) + "×" } ?? "—") — \(verdict(cpu) { $0 <= 1.1 })."
        )
        lines += notesAndFailures(shippers.map { ($0.title, results[shipper: $0].notes, results[shipper: $0].failures) })
        return lines
    }
}
