import Foundation

/// `streamup run [--metrics [ADDR:]PORT] FILE`: the pipelines of a file in one process.
///
/// Thread safety: a value type.
struct RunOptions: Sendable, Equatable {
    var file = ""
    var metrics = MetricsOptions()

    static let table: [OptionSpec<RunOptions>] = MetricsOptions.table.map { $0.lifted(\RunOptions.metrics) }

    static let help = """
        usage: streamup run [--metrics [ADDR:]PORT] FILE

        Runs every pipeline of FILE in one process. Each line that is not blank and does not
        start with # is one pipeline, in the words of a streamup command (tail, heartbeat,
        journal), with \\ at a line's end continuing it and ${NAME} taken from the environment
        (an unset NAME is refused, naming the line); --name NAME names a pipeline (default:
        its line number; stderr lines start with it):

            # /etc/streamup/pipelines.conf
            tail '/var/log/app/*.log' --state /var/lib/streamup/app.state --to loki \\
              -H 'Authorization: Bearer ${LOKI_TOKEN}' https://loki.example/loki/api/v1/push
            journal --name journal --state /var/lib/streamup/journal.state \\
              --to loki https://loki.example/loki/api/v1/push

          - each pipeline has its own buffer, spool, state file and stream; one that fails
            (its receiver refuses, its files vanish) never stops the others;
          - a pipeline keeps retrying through an outage of any length (unless its line gives
            --retries or --retry-max-time);
          - SIGHUP reads FILE again: pipelines whose line is unchanged go on untouched, removed
            ones stop as on SIGTERM (they deliver what they hold within --shutdown-timeout and
            save their state), new ones start; a FILE that does not parse is refused whole with
            one line naming the line, and the running pipelines go on;
          - SIGINT/SIGTERM stop every pipeline that way; a second one stops at once;
          - --metrics serves every pipeline's series with a pipeline="NAME" label, and /health
            answers 503 while any pipeline's delivery has failed for --unhealthy-after.

        \(helpLines(for: table))
        exit status: 0 when every pipeline delivered what it read; 1 when one ended otherwise;
        2 for a FILE that cannot be read or parsed at the start.
        """
}

extension CommandLineParser {
    static func parseRun(_ arguments: [String]) throws(UsageError) -> Command {
        if arguments.contains("-h") || arguments.contains("--help") { return .help(RunOptions.help) }
        var options = RunOptions()
        let (positional, rest) = try parseOptions(arguments, table: RunOptions.table, into: &options)
        let all = positional + (rest ?? [])
        guard all.count == 1, let file = all.first, !file.isEmpty else {
            throw UsageError("run: expected one FILE of pipelines (see streamup run --help)")
        }
        options.file = file
        return .run(options)
    }
}
