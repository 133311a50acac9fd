import Foundation

/// `streamup run [--check] [--metrics [ADDR:]PORT] FILE`: the pipelines of a file in one process.
///
/// Thread safety: a value type.
struct RunOptions: Sendable, Equatable {
    var file = ""
    var metrics = MetricsOptions()
    /// Check FILE and exit, running nothing.
    var check = false

    static let table: [OptionSpec<RunOptions>] =
        [
            .flag("--check", group: .output, help: "check FILE (every line, URL, state and spool directory, file to follow) and exit") {
                $0.check = true
            }
        ] + MetricsOptions.table.map { $0.lifted(\RunOptions.metrics) }

    static let help = """
        usage: streamup run [--check] [--metrics [ADDR:]PORT] FILE

        Runs every pipeline of FILE in one process. Each line that is not blank and does not
        start with # is one pipeline, in the words of a streamup command (tail, heartbeat,
        journal) with its receiver's http:// or https:// URL, with \\ at a line's end
        continuing it. Words are quoted as in a shell, and ${NAME} is taken from the
        environment wherever it stands, in single quotes too ($$ writes a $; an unset or empty
        NAME is refused, naming the line, never showing a value):

            # /etc/streamup/pipelines.conf
            tail '/var/log/app/*.log' --state /var/lib/streamup/app.state --to loki \\
              -H 'Authorization: Bearer ${LOKI_TOKEN}' https://loki.example/loki/api/v1/push
            journal --name journal --state /var/lib/streamup/journal.state \\
              --to loki https://loki.example/loki/api/v1/push

          - a pipeline is known by --name NAME, or else by its command and what it reads
            (tail '/var/log/app/*.log' above); stderr lines start with the name; two lines
            with one name are refused (give one a --name);
          - each pipeline has its own buffer, spool, state file and stream; one that fails
            (at start, or its receiver refuses) stays ended, says so, and is named by
            /health, and never stops the others;
          - a pipeline keeps retrying through an outage of any length (unless its line gives
            --retries or --retry-max-time);
          - SIGHUP reads FILE again: unchanged pipelines go on untouched, removed and changed
            ones stop as on SIGTERM (they deliver what they hold within --shutdown-timeout
            and save their state), new, changed and ended ones start, each once its earlier
            copy has let go of its state and spool; one line names what started, changed and
            stopped; a FILE that does not parse is refused whole, one line per bad line, and
            the running pipelines go on;
          - SIGINT/SIGTERM stop every pipeline that way; a second one stops at once;
          - --check reads FILE and checks it without running it: every line parses, every
            pipeline has an http(s) URL, state and spool directories exist and are writable,
            files and directories to follow are readable by this user;
          - --metrics serves every pipeline's series with a pipeline="NAME" label and its
            phase (streamup_pipeline_up, streamup_pipeline_state); /health answers 503 naming
            each pipeline that ended in failure or whose delivery has failed for
            --unhealthy-after;
          - the soft limit of open files is raised to the hard one; FILE is refused when its
            pipelines need more, with a line naming the limit (LimitNOFILE= in a unit).

        \(helpLines(for: table))
        exit status: 0 when every pipeline delivered what it read; 1 when one ended otherwise
        (run ends by itself only when every pipeline has ended); 64 for a FILE that cannot be
        read, parsed or run within the open-files limit (each problem one line), or that
        --check finds wrong; 130 for a second SIGINT/SIGTERM.
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
