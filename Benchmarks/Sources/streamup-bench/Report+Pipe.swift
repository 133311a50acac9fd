/// The report's first workload: a stream from a pipe, six clients.
///
/// Thread safety: stateless.
extension Report {
    static func pipeSection(_ results: Results, options: BenchOptions) -> [String] {
        let size = bytes(options.bytes)
        var lines: [String] = []
        lines.append("#### A stream from a pipe: \(size) to the sink")
        lines.append("")
        lines.append("- Clients, each a `PUT` (chunked, but streamup's segments and the bare segments uploader send each request with its `Content-Length`):")
        lines.append(
            "  - \(Client.segments.title): `\(Client.segments.displayCommand)`, acknowledged segments of at most 8 MiB / 1 s, `--records none` (the bytes are opaque);"
        )
        lines.append("  - \(Client.single.title): `\(Client.single.displayCommand)`, one never-ending request;")
        lines.append("  - curl: `\(Client.curl.displayCommand)`;")
        lines.append(
            "  - \(Client.bare.title), the platform's bound (DesignNotes, platform fact 7): `\(Client.bare.displayCommand)`, the bench itself run as a child, a bare `URLSession.uploadTask(withStreamedRequest:)` reading an in-memory `InputStream` subclass (one `memcpy` per read, filling all URLSession asks for from a 1 MiB buffer of the same bytes; no pipe, no ring, no other thread of ours), so its `rusage` is URLSession's alone;"
        )
        lines.append(
            "  - \(Client.barePipe.title), the platform's bound for a pipe: `\(Client.barePipe.displayCommand)`, the same child with the same session, whose `InputStream` is one blocking `read(2)` of its stdin (the same pipe as the others) per read, until end of file; no ring, no other thread;"
        )
        lines.append(
            "  - \(Client.bareSegments.title), the platform's bound for a stream sent as requests one at a time: `\(Client.bareSegments.displayCommand)`, the same child and session sending the bytes from memory as requests of \(bytes(Client.segmentBytes)) (streamup's default segment, half its 8 MiB buffer), each with its `Content-Length`, the next once the last was answered; each pays URLSession's fixed cost of a request;"
        )
        lines.append(
            "  - \(Client.barePipeSegments.title), the bound for streamup's default delivery: `\(Client.barePipeSegments.displayCommand)`, the same child and session sending the same pipe as requests of \(bytes(Client.segmentBytes)), each with its `Content-Length`, the next once the last was answered (one blocking `read(2)` of stdin per read, at most up to the request's end): the pipe and the requests, with nothing of ours between them."
        )
        lines.append(
            "- Input: a bench thread writing one prefilled 1 MiB buffer (64-byte text lines) again and again with `write(2)` into the client's stdin pipe (enlarged to 1 MiB); the memory bare uploaders make the same bytes themselves."
        )
        lines.append("- Check: the sink's requests for the run add up to exactly \(size), every one complete and answered 200 (no retry, no duplicate).")
        lines.append(
            "- Peak RSS, 10 GB: one \(bytes(Benchmark.bigStreamBytes)) stream per client after the rounds (only where the median throughput predicts at most \(Int(Benchmark.bigStreamBudgetSeconds)) s)."
        )
        lines.append("")

        let clients = Client.allCases
        let ratioHeadings = [
            "segments / single", "single / bare (memory)", "single / bare (pipe)", "segments / bare (pipe)", "segments / bare (4 MiB requests)",
            "segments / bare (pipe, 4 MiB requests)", "bare (4 MiB requests) / bare (memory)", "streamup (default) / curl",
        ]
        var table = MarkdownTable(["Measure"] + clients.map(\.title) + ratioHeadings)
        func row(_ title: String, digits: Int, _ values: (Results.ClientMeasures) -> [Double]) {
            let columns = clients.map { MarkdownTable.cell(values(results[$0]), digits: digits) }
            let ratios = [
                MarkdownTable.ratio(values(results[.segments]), values(results[.single])),
                MarkdownTable.ratio(values(results[.single]), values(results[.bare])),
                MarkdownTable.ratio(values(results[.single]), values(results[.barePipe])),
                MarkdownTable.ratio(values(results[.segments]), values(results[.barePipe])),
                MarkdownTable.ratio(values(results[.segments]), values(results[.bareSegments])),
                MarkdownTable.ratio(values(results[.segments]), values(results[.barePipeSegments])),
                MarkdownTable.ratio(values(results[.bareSegments]), values(results[.bare])),
                MarkdownTable.ratio(values(results[.segments]), values(results[.curl])),
            ]
            table.add([title] + columns + ratios)
        }
        row("Throughput (MB/s)", digits: 0) { $0.throughputMBps }
        row("CPU of the client, user+sys per GB (s)", digits: 2) { $0.cpuSecondsPerGB }
        row("  of which user per GB (s)", digits: 2) { $0.userSecondsPerGB }
        row("  of which sys per GB (s)", digits: 2) { $0.systemSecondsPerGB }
        row("Peak RSS of the client, \(size) stream (MiB)", digits: 1) { $0.rssMiB }
        if options.big {
            row("Peak RSS of the client, \(bytes(Benchmark.bigStreamBytes)) stream (MiB, 1 run)", digits: 1) { $0.rss10GBMiB }
        }
        table.add(
            ["Requests the sink received per stream"] + clients.map { MarkdownTable.cell(results[$0].requests, digits: 0) } + ratioHeadings.map { _ in "—" })
        table.add(
            ["Runs that did not count (stalled or failed; listed below)"]
                + clients.map { "\(results[$0].pipeFailures.count) of \(results[$0].pipeRuns)" } + ratioHeadings.map { _ in "—" })
        lines += table.lines

        let throughput = ratioOfMedians(results[.segments].throughputMBps, results[.single].throughputMBps)
        let rssGap = differenceOfMedians(results[.segments].rssMiB, results[.single].rssMiB)
        lines.append("")
        lines.append("Segment targets (acknowledged segments beside the single request), from the table:")
        lines.append(
            "- throughput ≥ 0.95× the single request's: \(times(throughput)) — \(verdict(throughput) { $0 >= 0.95 });")
        lines.append(
            "- peak RSS ≤ the single request's + 8 MiB: \(rssGap.map { (($0 >= 0) ? "+" : "") + number($0, digits: 1) + " MiB" } ?? "—") — \(verdict(rssGap) { $0 <= 8 });"
        )
        let bareGap = differenceOfMedians(results[.segments].rssMiB, results[.bare].rssMiB)
        lines.append(
            "- peak RSS ≤ the bare URLSession program's (memory) + 11 MiB: \(bareGap.map { (($0 >= 0) ? "+" : "") + number($0, digits: 1) + " MiB" } ?? "—") — \(verdict(bareGap) { $0 <= 11 })."
        )
        lines += requestCost(results)
        lines += singleRequestTargets(results)
        lines += notesAndFailures(clients.map { ($0.title, results[$0].notes, results[$0].pipeFailures) })
        return lines
    }

    /// What sending a stream as requests one at a time costs on this platform, without streamup,
    /// and the default delivery's targets against the bare programs that send the same requests
    /// (throughput ≥ 0.95× theirs, peak RSS within 11 MiB of theirs): from memory (URLSession
    /// alone) and from the same pipe (URLSession and the pipe, nothing of ours).
    private static func requestCost(_ results: Results) -> [String] {
        let platform = ratioOfMedians(results[.bareSegments].throughputMBps, results[.bare].throughputMBps)
        let pipePlatform = ratioOfMedians(results[.barePipeSegments].throughputMBps, results[.barePipe].throughputMBps)
        var lines = [
            "",
            "Requests one at a time, from the table: a bare URLSession program sending the stream as \(bytes(Client.segmentBytes)) requests reaches \(times(platform)) of its single request from memory and \(times(pipePlatform)) from the pipe (URLSession's fixed cost per request, paid with no streamup code).",
            "",
            "Default-delivery targets (streamup's segments ≥ 0.95× a bare program sending the same requests, peak RSS within 11 MiB of it), from the table:",
        ]
        for bare in [Client.bareSegments, .barePipeSegments] {
            let throughput = ratioOfMedians(results[.segments].throughputMBps, results[bare].throughputMBps)
            let cpu = ratioOfMedians(results[.segments].cpuSecondsPerGB, results[bare].cpuSecondsPerGB)
            let rssGap = differenceOfMedians(results[.segments].rssMiB, results[bare].rssMiB)
            let counts = [Client.segments, bare].map { Summary(results[$0].requests)?.median }
            let same = counts[0] != nil && counts[0] == counts[1]
            lines.append(
                "- against \(bare.title): throughput \(times(throughput)) — \(verdict(throughput) { $0 >= 0.95 }); peak RSS \(rssGap.map { (($0 >= 0) ? "+" : "") + number($0, digits: 1) + " MiB" } ?? "—") — \(verdict(rssGap) { $0 <= 11 }); CPU per GB \(times(cpu))"
                    + (same
                        ? " (the same number of requests)"
                        : "; the request counts differ (\(counts.map { $0.map { number($0) } ?? "—" }.joined(separator: " and "))), so the two do not send the same requests")
                    + (bare == .bareSegments ? ";" : "."))
        }
        return lines
    }

    /// The single request against each bare uploader: throughput ≥ 0.95× the bare one's, CPU per
    /// GB within 1.1× of the bare one's.
    private static func singleRequestTargets(_ results: Results) -> [String] {
        var lines = [
            "",
            "Single-request targets (the single request ≥ 0.95× the bare URLSession uploader, CPU per GB within 1.1× of it), from the table, against each bare column (memory: no input to read; pipe: reads the same pipe as every other client):",
        ]
        for bare in [Client.bare, .barePipe] {
            let throughput = ratioOfMedians(results[.single].throughputMBps, results[bare].throughputMBps)
            let cpu = ratioOfMedians(results[.single].cpuSecondsPerGB, results[bare].cpuSecondsPerGB)
            lines.append(
                "- against \(bare.title): throughput \(times(throughput)) — \(verdict(throughput) { $0 >= 0.95 }); CPU per GB \(times(cpu)) — \(verdict(cpu) { $0 <= 1.1 })\(bare == .bare ? ";" : ".")"
            )
        }
        return lines
    }

    /// `0.93×`, or `—` without a value.
    private static func times(_ ratio: Double?) -> String {
        ratio.map { number($0, digits: 2) + "×" } ?? "—"
    }

    static func ratioOfMedians(_ a: [Double], _ b: [Double]) -> Double? {
        guard let a = Summary(a), let b = Summary(b), b.median > 0 else { return nil }
        return a.median / b.median
    }

    static func differenceOfMedians(_ a: [Double], _ b: [Double]) -> Double? {
        guard let a = Summary(a), let b = Summary(b) else { return nil }
        return a.median - b.median
    }
}
