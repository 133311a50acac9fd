/// The soak workloads' Markdown.
///
/// Thread safety: stateless.
enum SoakReport {
    static func requests(_ results: [RequestSoakResult], planned: Int) -> String {
        var text = "## Many requests: \(planned) requests of \(RequestSoak.segmentBytes) bytes, one at a time\n\n"
        let tenths = (1...10).map { planned * $0 / 10 }
        var rows = [["requests answered (the first sample past)"] + results.flatMap { ["\($0.client) RSS (MiB)", "fds", "threads"] }]
        for mark in tenths {
            var row = [String(mark)]
            for result in results {
                // The last tenth: the last sample (taken a moment before the last answers).
                let last = mark == tenths.last ? result.samples.last : nil
                if let sample = result.samples.first(where: { $0.progress >= mark }) ?? last {
                    row += [mib(sample.rssKiB), String(sample.openFiles), String(sample.threads)]
                } else {
                    row += ["–", "–", "–"]
                }
            }
            rows.append(row)
        }
        text += table(rows) + "\n"
        for result in results {
            let first = result.samples.first { $0.progress >= planned / 10 }
            let last = result.samples.last
            var line = "- \(result.client): peak RSS \(mib(result.exit.maxRSSKiB)) MiB"
            if let first, let last, last.progress > first.progress {
                let growth = Double(last.rssKiB - first.rssKiB) / 1024
                let perTenThousand = growth * 10_000 / Double(last.progress - first.progress)
                line += String(
                    format: "; RSS %+.1f MiB from %d to %d requests (%+.2f MiB per 10,000); open files %d–%d; threads %d–%d",
                    growth, first.progress, last.progress, perTenThousand, result.samples.map(\.openFiles).min() ?? 0,
                    result.samples.map(\.openFiles).max() ?? 0, result.samples.map(\.threads).min() ?? 0, result.samples.map(\.threads).max() ?? 0)
            }
            line += String(format: "; %.1f CPU-s", result.exit.userSeconds + result.exit.systemSeconds)
            if let failure = result.failure { line += "; **did not count: \(failure)**" }
            text += line + "\n"
        }
        return text + "\n"
    }

    static func run(_ result: RunSoakResult) -> String {
        var text =
            "## `streamup run`: \(result.pipelines) tail pipelines for \(Int(result.seconds)) s\n\n"
            + "\(result.reloads) reloads (SIGHUP; every other one without the last pipeline), \(result.rotations) rotations of every file, "
            + "the receiver down \(Int(result.outageSeconds)) s from a third of the way in.\n\n"
        let step = max(1, result.samples.count / 31)
        var rows = [["time (s)", "RSS (MiB)", "anonymous", "files", "open files", "threads", "lines arrived"]]
        for (index, sample) in result.samples.enumerated() where index % step == 0 || index == result.samples.count - 1 {
            rows.append([
                String(Int(sample.seconds)), mib(sample.rssKiB), mib(sample.anonymousKiB), mib(sample.fileKiB), String(sample.openFiles),
                String(sample.threads), String(sample.progress),
            ])
        }
        text += table(rows) + "\n"
        // From the end of the first tenth (started, buffers allocated) to the end.
        let settled = result.samples.filter { $0.seconds >= result.seconds / 10 }
        if let first = settled.first, let last = settled.last {
            text += String(
                format: "- RSS %@ MiB at %d s, %@ MiB at %d s (max %@ MiB after %d s); open files %d–%d; threads %d–%d\n", mib(first.rssKiB),
                Int(first.seconds), mib(last.rssKiB), Int(last.seconds), mib(settled.map(\.rssKiB).max() ?? 0), Int(first.seconds),
                settled.map(\.openFiles).min() ?? 0, settled.map(\.openFiles).max() ?? 0, settled.map(\.threads).min() ?? 0,
                settled.map(\.threads).max() ?? 0)
        }
        text +=
            "- lines written \(result.linesWritten), arrived \(result.counts.distinct), arrived again \(result.counts.duplicates), requests \(result.counts.requests)"
        if let exit = result.exit {
            text += String(format: "; exit status %d, %.1f CPU-s, peak RSS %@ MiB", exit.status, exit.userSeconds + exit.systemSeconds, mib(exit.maxRSSKiB))
        }
        if let failure = result.failure { text += "; **did not count: \(failure)**" }
        return text + "\n\n"
    }

    private static func mib(_ kib: Int) -> String { String(format: "%.1f", Double(kib) / 1024) }

    private static func table(_ rows: [[String]]) -> String {
        guard let header = rows.first else { return "" }
        var text = "| " + header.joined(separator: " | ") + " |\n|" + String(repeating: "---|", count: header.count) + "\n"
        for row in rows.dropFirst() { text += "| " + row.joined(separator: " | ") + " |\n" }
        return text
    }
}
