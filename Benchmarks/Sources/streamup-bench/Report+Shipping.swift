/// The report's log-shipping tables: one file, then many files.
///
/// Thread safety: stateless.
extension Report {
    static func shippingSection(_ results: Results, options: BenchOptions, machine: Machine, files: Int) -> [String] {
        let rate = grouped(options.logRate)
        let total = grouped(Int(Double(options.logRate) * options.logSeconds))
        let many = files > 1
        let followed = many ? "'DIR/*.log'" : "FILE"
        var lines: [String] = []
        lines.append(
            many
                ? "#### Log shipping: \(files) files growing at \(rate) lines/s in all for \(number(options.logSeconds, digits: 0)) s"
                : "#### Log shipping: a file growing at \(rate) lines/s for \(number(options.logSeconds, digits: 0)) s")
        lines.append("")
        if many {
            lines.append(
                "- Writer: as for one file, but line *i* goes to file *i* mod \(files) (DIR/app000.log …), one `write(2)` per line; each file grows at \(grouped(options.logRate / files)) lines/s; \(total) lines per run."
            )
            lines.append("- Shippers follow every `*.log` in DIR with a wildcard:")
        } else {
            lines.append(
                "- Writer: a bench thread appends 100-byte lines (`seq=` and a 10-digit number, filler, `\\n`) to FILE (`O_APPEND`) on a steady schedule: it sleeps until the next line is due and writes every line then due in one `write(2)` (one line per call while it keeps up); \(total) lines per run. Its achieved rate and worst lag behind schedule are in the table."
            )
            lines.append("- Shippers, each started on the empty FILE in a fresh temporary directory before the first line, following it from its start:")
        }
        let shippers = Shipper.compared(files: files)
        for shipper in shippers {
            switch shipper {
            case .streamup, .single:
                lines.append("  - \(shipper.title): `\(shipper.displayCommand(files: followed))`;")
            case .tailCurl:
                lines.append("  - `\(shipper.displayCommand(files: followed))`: the CPU and peak RSS of both processes, added;")
            case .syslogNG:
                let name = machine.syslogNG.map { "syslog-ng \($0.release)" } ?? "syslog-ng"
                lines.append("  - \(name), run by hand (not as a service): `\(shipper.displayCommand(files: followed))`, with DIR/syslog-ng.conf:")
                lines.append("")
                lines.append("    ```")
                lines += SyslogNGSetup.configuration(
                    version: machine.syslogNG?.configVersion ?? "VERSION", file: many ? "DIR" : "FILE", files: files, url: "URL"
                )
                .split(separator: "\n").map { "    \($0)" }
                lines.append("    ```")
                lines.append("")
                if !many {
                    lines.append(
                        "    (`log-iw-size(10000)`: with flow control, the source's default window of 100 messages would cap every batch at 100 lines; `flags(flow-control)`: the source waits for the destination instead of dropping lines.)"
                    )
                }
            case .fluentBit:
                let name = machine.fluentBit ?? "Fluent Bit"
                lines.append(
                    "  - \(name), run by hand: `\(shipper.displayCommand(files: followed))`, with DIR/fluent-bit.conf (`tail` with the stat watcher and 512 KiB reads, `http` as JSON lines, flushed every second; Fluent Bit's cheapest setting measured for this workload):"
                )
                lines.append("")
                lines.append("    ```")
                lines += FluentBitSetup.configuration(path: many ? "DIR/*.log" : "FILE", port: 0).split(separator: "\n").map { "    \($0)" }
                lines.append("    ```")
                lines.append("")
            }
        }
        if !many {
            lines.append(
                "- Receiver: a minimal HTTP/1.1 server in the bench (keep-alive, chunked or `Content-Length` bodies, every request answered 200) that counts the distinct `seq=` numbers *as the bytes arrive*, also inside a request that has not ended (the sink reports a request only at its end). A run counts only if every line arrived, once, and every request ended. Line latency: from the end of the `write(2)` that put a line in its file to the `recv` that brought its number to the receiver."
            )
            lines.append(
                "- End of a run: once every line has arrived, the shipper gets SIGTERM (`tail | curl`: `tail` does, and `curl` ends its request at the end of its input) and exits; CPU seconds (user+sys) and peak RSS are each process's own (GNU time), over its whole life from spawn to exit."
            )
        }
        lines.append("")

        // One file: the last column compares the default with --single-request.
        var table = MarkdownTable(["Measure"] + shippers.map(\.title) + (many ? [] : ["default / --single-request"]))
        let dashes = many ? [] : ["—"]
        func row(_ title: String, digits: Int, _ values: (Results.ShipperMeasures) -> [Double]) {
            let ratio = MarkdownTable.ratio(values(results[shipper: .streamup, files: files]), values(results[shipper: .single, files: files]))
            table.add([title] + shippers.map { MarkdownTable.cell(values(results[shipper: $0, files: files]), digits: digits) } + (many ? [] : [ratio]))
        }
        row("CPU of the shipper over the run, user+sys (s)", digits: 2) { $0.cpuSeconds }
        row("  of which user (s)", digits: 2) { $0.userSeconds }
        row("  of which sys (s)", digits: 2) { $0.systemSeconds }
        row("CPU per shipped line (µs)", digits: 2) { $0.cpuMicrosecondsPerLine }
        row("Line → receiver p50 (ms)", digits: 0) { $0.latencyP50Ms }
        row("Line → receiver p99 (ms)", digits: 0) { $0.latencyP99Ms }
        row("Peak RSS of the shipper (MiB)", digits: 1) { $0.rssMiB }
        table.add(
            ["Lines that arrived, each once (of \(total))"] + shippers.map { MarkdownTable.cell(results[shipper: $0, files: files].linesDelivered, digits: 0) }
                + dashes)
        table.add(
            ["Requests the receiver got per run"] + shippers.map { MarkdownTable.cell(results[shipper: $0, files: files].requests, digits: 0) } + dashes)
        table.add(
            ["Writer: lines/s achieved (every run)"]
                + shippers.map { MarkdownTable.cell(results[shipper: $0, files: files].writerLinesPerSecond, digits: 0) } + dashes)
        table.add(
            ["Writer: worst lag behind schedule (ms, every run)"]
                + shippers.map { MarkdownTable.cell(results[shipper: $0, files: files].writerMaxLagMs, digits: 1) } + dashes)
        table.add(
            ["Runs that did not count (stalled, failed or lines missing; listed below)"]
                + shippers.map { "\(results[shipper: $0, files: files].failures.count) of \(results[shipper: $0, files: files].runs)" } + dashes)
        lines += table.lines

        if !many {
            let cpu = ratioOfMedians(results[shipper: .streamup, files: files].cpuSeconds, results[shipper: .single, files: files].cpuSeconds)
            lines.append("")
            lines.append(
                "Segment target: CPU of the default (segments) ≤ 1.1× `--single-request`'s: \(cpu.map { number($0, digits: 2) + "×" } ?? "—") — \(verdict(cpu) { $0 <= 1.1 })."
            )
        }
        lines += notesAndFailures(
            shippers.map { ($0.title, results[shipper: $0, files: files].notes, results[shipper: $0, files: files].failures) })
        return lines
    }
}
