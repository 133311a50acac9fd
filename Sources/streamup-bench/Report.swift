import Foundation

/// Turns ``Results`` into one Markdown section for README.md's "Performance": the machine,
/// the exact commands, then one table of medians with min–max over the rounds.
///
/// Thread safety: stateless.
enum Report {
    struct Machine: Sendable {
        var cores: Int
        var cpu: String
        var kernel: String
        var curlVersion: String
    }

    static func render(_ results: Results, options: BenchOptions, arguments: [String], machine: Machine) -> String {
        let streamup = results[.streamup]
        let curl = results[.curl]
        var rows: [[String]] = []
        func compare(_ title: String, _ a: [Double], _ b: [Double], digits: Int = 0) {
            let left = Summary(a)
            let right = Summary(b)
            var ratio = "—"
            if let left, let right, right.median > 0 {
                ratio = String(format: "%.2f×", left.median / right.median)
            }
            rows.append([title, cell(left, digits: digits), cell(right, digits: digits), ratio])
        }
        compare("Throughput, \(bytes(options.bytes)) from a pipe to the sink (MB/s)", streamup.throughputMBps, curl.throughputMBps)
        compare("CPU of the client, user+sys per GB (s)", streamup.cpuSecondsPerGB, curl.cpuSecondsPerGB, digits: 2)
        compare("  of which user per GB (s)", streamup.userSecondsPerGB, curl.userSecondsPerGB, digits: 2)
        compare("  of which sys per GB (s)", streamup.systemSecondsPerGB, curl.systemSecondsPerGB, digits: 2)
        for rate in Benchmark.latencyRates {
            let label = rate.formatted(.number.grouping(.automatic))
            compare("Line latency p50 at \(label) lines/s (ms)", streamup.latencyP50Ms[rate] ?? [], curl.latencyP50Ms[rate] ?? [], digits: 2)
            compare("Line latency p99 at \(label) lines/s (ms)", streamup.latencyP99Ms[rate] ?? [], curl.latencyP99Ms[rate] ?? [], digits: 2)
            compare("Line latency max at \(label) lines/s (ms)", streamup.latencyMaxMs[rate] ?? [], curl.latencyMaxMs[rate] ?? [], digits: 2)
        }
        compare("Spawn → first body byte at the receiver (ms; every latency run, also ones that failed later)", streamup.firstByteMs, curl.firstByteMs, digits: 1)
        compare("Peak RSS of the client, 1 GB stream (MiB)", streamup.rss1GBMiB, curl.rss1GBMiB, digits: 1)
        if options.big {
            compare("Peak RSS of the client, 10 GB stream (MiB, 1 run)", streamup.rss10GBMiB, curl.rss10GBMiB, digits: 1)
        }
        rows.append([
            "Runs that did not count (stalled or failed; listed below)",
            "\(streamup.failures.count) of \(streamup.runs)", "\(curl.failures.count) of \(curl.runs)", "—",
        ])
        rows.append(["**Sink** (`streamup sink`) RSS with no connection (MiB)", cell(Summary(results.sinkBaselineKiB.map { $0 / 1024 }), digits: 1), "—", "—"])
        for count in Benchmark.slowStreamCounts where count <= options.maxSlowStreams {
            let total = Summary(results.sinkAddedKiB[count] ?? [])
            let each = Summary(results.sinkPerConnectionKiB[count] ?? [])
            let label = count.formatted(.number.grouping(.automatic))
            rows.append([
                "**Sink** RSS added by \(label) slow stream\(count == 1 ? "" : "s"): total KiB; per connection KiB",
                "\(cell(total, digits: 0)); \(cell(each, digits: 1))", "—", "—",
            ])
        }
        rows.append([
            "**Sink** ceiling: raw sender, 1 MiB chunks, \(bytes(options.bytes)) (MB/s)",
            cell(Summary(results.sinkCeilingMBps), digits: 0), "—", "—",
        ])

        var lines: [String] = []
        let date = Date().formatted(.iso8601.year().month().day())
        lines.append("### streamup vs curl (\(date))")
        lines.append("")
        lines.append("- Machine: \(machine.cores) cores (\(machine.cpu)), Linux \(machine.kernel), \(machine.curlVersion).")
        lines.append("- Run: `swift run -c release streamup-bench\(arguments.isEmpty ? "" : " " + arguments.joined(separator: " "))`; \(options.rounds) round\(options.rounds == 1 ? "" : "s"), each running both clients in alternating order; cells are the median (min–max) over the rounds; ratio = streamup / curl of the medians; total \(Int(results.elapsedSeconds.rounded())) s.")
        lines.append("- Clients: `\(Client.streamup.displayCommand())` and `\(Client.curl.displayCommand())`, both a chunked PUT of stdin.")
        lines.append("- Sink: `SinkServer` in the bench process on 127.0.0.1, port 0, `hashBodies: false`, no output directory; every run checks that the sink got every byte and answered 200.")
        lines.append("- Throughput stdin: a bench thread writing one prefilled 1 MiB buffer again and again with `write(2)` into the client's stdin pipe (pipe enlarged to 1 MiB). Time is from just before `posix_spawn` to the client's exit; CPU and peak RSS are the client's `rusage` from `wait4`.")
        lines.append("- Latency: 100-byte lines written one `write(2)` each at a steady rate for \(Report.number(options.latencySeconds, digits: 0)) s, each stamped with `CLOCK_MONOTONIC` ns when written, timed on arrival at a minimal chunked HTTP/1.1 receiver in the bench (the sink has no per-chunk hook). First byte: a line is already in the pipe at spawn.")
        lines.append("- Sink memory: `streamup \(SinkMemory.arguments.joined(separator: " "))` as a child; N raw connections each send a chunked PUT head and three 4-byte chunks 100 ms apart and stay open; VmRSS from `/proc/PID/status` minus the same process's VmRSS before any connection.")
        lines.append("- A run whose progress stops for \(Int(options.stallSeconds)) s is killed and counted below, not in the medians.")
        lines.append("")
        lines.append("| Measure | streamup | curl -T - | streamup / curl |")
        lines.append("|---|---:|---:|---:|")
        for row in rows {
            lines.append("| " + row.joined(separator: " | ") + " |")
        }
        let failures = Client.allCases.flatMap { client in results[client].failures.map { "\(client.rawValue): \($0)" } }
            + results.sinkFailures.map { "sink: \($0)" }
        let notes = Client.allCases.flatMap { client in results[client].notes.map { "\(client.rawValue): \($0)" } }
        if !notes.isEmpty {
            lines.append("")
            lines.append("Left out:")
            for note in notes { lines.append("- \(note)") }
        }
        if !failures.isEmpty {
            lines.append("")
            lines.append("Runs that did not count:")
            for failure in failures { lines.append("- \(failure)") }
        }
        return lines.joined(separator: "\n")
    }

    /// `median (min–max)`, or `—` without values.
    static func cell(_ summary: Summary?, digits: Int) -> String {
        guard let summary else { return "—" }
        if summary.count == 1 || summary.min == summary.max { return number(summary.median, digits: digits) }
        return "\(number(summary.median, digits: digits)) (\(number(summary.min, digits: digits))–\(number(summary.max, digits: digits)))"
    }

    static func number(_ value: Double, digits: Int = 0) -> String {
        String(format: "%.\(digits)f", value)
    }

    /// `2 GB`, `256 MB`, `655 kB` (decimal units).
    static func bytes(_ count: Int) -> String {
        let value = Double(count)
        if value >= 1e9 { return "\(trimmed(value / 1e9)) GB" }
        if value >= 1e6 { return "\(trimmed(value / 1e6)) MB" }
        if value >= 1e3 { return "\(trimmed(value / 1e3)) kB" }
        return "\(count) B"
    }

    private static func trimmed(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
    }
}
