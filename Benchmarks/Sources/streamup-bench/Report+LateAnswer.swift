/// The late-answer step: streamup against a receiver that answers each request late, beside the
/// bound its buffer sets.
///
/// Thread safety: stateless.
extension Report {
    static func lateAnswerSection(_ results: Results, options: BenchOptions) -> [String] {
        let delay = options.answerDelayMilliseconds
        let bound = LateAnswerRun.boundMBps(delayMilliseconds: delay)
        var lines: [String] = []
        lines.append("#### Answers \(delay) ms late: \(bytes(options.lateAnswerBytes)) from a pipe")
        lines.append("")
        lines.append(
            "- Receiver: a second in-process `SinkServer` (no hashing) with `SinkFaults.answerDelay` \(delay) ms: each request's 200 leaves \(delay) ms after its body was stored, as from a far receiver or one that commits before answering."
        )
        lines.append(
            "- Client: streamup's acknowledged segments, `--records none`, reading a pipe that a bench thread fills as fast as it takes bytes (as for the first table); bound: the default buffer over the delay, \(LateAnswerRun.bufferBytes >> 20) MiB / \(delay) ms = \(number(bound)) MB/s (the most a sender can have unanswered is its buffer)."
        )
        lines.append("")
        var table = MarkdownTable([
            "Command", "Throughput (MB/s)", "Bound (MB/s)", "Throughput / bound", "Peak RSS (MiB)", "Requests", "Runs that did not count",
        ])
        for row in LateAnswerCase.all {
            let measures = results[lateAnswer: row]
            let ratio = Summary(measures.throughputMBps).map { String(format: "%.2f×", $0.median / bound) } ?? "—"
            table.add([
                "`\(row.displayCommand)`", MarkdownTable.cell(measures.throughputMBps, digits: 0), number(bound), ratio,
                MarkdownTable.cell(measures.rssMiB, digits: 1), MarkdownTable.cell(measures.requests, digits: 0),
                "\(measures.failures.count) of \(measures.runs)",
            ])
        }
        lines += table.lines
        lines.append("")
        lines.append("Target: ≥ 0.70× the bound with the default segments and with `--segment-bytes 1MiB`.")
        lines += notesAndFailures(LateAnswerCase.all.map { ($0.title, [], results[lateAnswer: $0].failures) })
        return lines
    }
}
