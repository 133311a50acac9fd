/// A step the bench can run alone (`--only`).
///
/// Thread safety: a value type.
enum BenchStep: String, Sendable {
    case lateAnswers = "late-answers"
    case pipe
    case logShipping = "log-shipping"
}

/// What the command line asks the bench to do.
///
/// Thread safety: a value type.
struct BenchOptions: Sendable {
    var rounds = 5
    /// Bytes per throughput run (1 MB = 10^6 bytes).
    var bytes = 2_000_000_000
    var quick = false
    /// Run the 10 GB peak-RSS stream (default: on, off with --quick).
    var big = true
    /// The largest number of concurrent slow streams held open against the sink.
    var maxSlowStreams = 1_000
    /// How long each latency run sends lines.
    var latencySeconds = 2.0
    /// A run whose progress stops this long is killed and counted as stalled.
    var stallSeconds = 5.0
    /// Run the log-shipping workload.
    var shipping = true
    /// Lines per second the log writer appends.
    var logRate = 10_000
    /// How long the log writer appends.
    var logSeconds = 20.0
    /// Small POSTs per waiting run, and how long the receiver waits before each answer.
    var waitRequests = 3
    var waitDelaySeconds = 2.0
    /// How late the late-answer step's receiver answers, and the bytes of each of its runs.
    var answerDelayMilliseconds = 50
    var lateAnswerBytes = 400_000_000
    /// The one step to run alone (`--only late-answers`, `pipe`, `log-shipping`), or nil for all.
    var only: BenchStep?

    /// Whether the run includes `step`.
    func runs(_ step: BenchStep) -> Bool { only == nil || only == step }
    /// The `streamup` binary to measure (default: ``Binaries/defaultStreamup``).
    var streamup: String?

    static let usage = """
        usage: swift run -c release streamup-bench [--rounds N] [--bytes SIZE] [--quick] [--big | --no-big]
                                                   [--log-seconds S] [--log-rate N] [--no-log] [--streamup PATH]
                                                   [--answer-delay MS] [--only late-answers | pipe | log-shipping]

        Measures streamup beside curl, a bare URLSession uploader and syslog-ng, all against the
        project's sink in this process, and prints a Markdown report on stdout (progress on stderr):
        a stream from a pipe (streamup's default acknowledged segments, --single-request,
        `curl -T -`, bare URLSession from memory or the same pipe, as one request or as 4 MiB
        requests one at a time), line latency, the sink's memory,
        and a log file followed while it grows (`streamup tail`, --single-request,
        `tail -F | curl -T -`, syslog-ng http()).
          --rounds N        rounds; each runs every client, alternating the order (default 5)
          --bytes SIZE      bytes per throughput run, e.g. 500MB, 2GB, 1GiB (default 2GB; 1 MB = 10^6 bytes)
          --quick           CI's smoke run: 1 round, 64MB, 1 s latency runs, 2 s log runs, 1 slow answer,
                            no 10 GB stream, at most 100 slow streams, 32MB per late-answer run
          --big             include the 10 GB peak-RSS stream even with --quick
          --no-big          skip the 10 GB peak-RSS stream
          --log-seconds S   how long the log file grows in each log-shipping run (default 20)
          --log-rate N      lines (100 bytes) per second appended to it (default 10000)
          --no-log          skip the log-shipping runs
          --answer-delay MS how late the late-answer step's receiver answers each request (default 50)
          --only late-answers  run only the late-answer step (400MB per run; 32MB with --quick)
          --only pipe       run only the stream from a pipe (every client, --bytes per run; add --no-big
                            to skip its 10 GB peak-RSS stream)
          --only log-shipping  run only the log-shipping runs (1 and 100 files, every shipper)
          --streamup PATH   the streamup binary to measure (default: the root package's .build/release/streamup)
        The long runs (memory per request; `streamup run` for 30 minutes) are `--soak requests|run|all`;
        `streamup-bench --soak --help` says how.
        Build streamup first, in the repository's root: `swift build -c release --static-swift-stdlib --product streamup`.
        Exit status 3 when any run did not count (the report lists them).
        Needs GNU time as /usr/bin/time (Debian: time), which measures each client's own CPU and peak RSS.
        syslog-ng is optional (Debian: syslog-ng-core syslog-ng-mod-http); without it its column is empty.
        """

    /// Parses argv without the program name; throws a message for the user.
    static func parse(_ arguments: [String]) throws(BenchError) -> BenchOptions? {
        var options = BenchOptions()
        var rounds: Int?
        var bytes: Int?
        var big: Bool?
        var logSeconds: Double?
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            switch argument {
            case "-h", "--help":
                return nil
            case "--quick":
                options.quick = true
            case "--big":
                big = true
            case "--no-big":
                big = false
            case "--no-log":
                options.shipping = false
            case "--only":
                guard let value = remaining.popFirst(), let step = BenchStep(rawValue: value) else {
                    throw BenchError("--only takes one step: late-answers, pipe or log-shipping")
                }
                options.only = step
            case "--answer-delay":
                guard let value = remaining.popFirst(), let milliseconds = Int(value), (1...10_000).contains(milliseconds) else {
                    throw BenchError("--answer-delay needs a number of milliseconds from 1 to 10000")
                }
                options.answerDelayMilliseconds = milliseconds
            case "--streamup":
                guard let value = remaining.popFirst() else { throw BenchError("--streamup needs the path of a streamup binary") }
                options.streamup = value
            case "--rounds":
                guard let value = remaining.popFirst(), let count = Int(value), (1...100).contains(count) else {
                    throw BenchError("--rounds needs a number from 1 to 100")
                }
                rounds = count
            case "--bytes":
                guard let value = remaining.popFirst() else { throw BenchError("--bytes needs a size, e.g. 2GB") }
                guard let size = parseSize(value), size >= 1_000_000 else {
                    throw BenchError("--bytes: '\(value)' is not a size of at least 1MB (e.g. 500MB, 2GB, 1GiB)")
                }
                bytes = size
            case "--log-seconds":
                guard let value = remaining.popFirst(), let seconds = Double(value), (1...3_600).contains(seconds) else {
                    throw BenchError("--log-seconds needs a number of seconds from 1 to 3600")
                }
                logSeconds = seconds
            case "--log-rate":
                guard let value = remaining.popFirst(), let rate = Int(value), (1...1_000_000).contains(rate) else {
                    throw BenchError("--log-rate needs a number of lines per second from 1 to 1000000")
                }
                options.logRate = rate
            default:
                throw BenchError("unknown argument '\(argument)'")
            }
        }
        if options.quick {
            options.rounds = 1
            options.bytes = 64_000_000
            options.big = false
            options.maxSlowStreams = 100
            options.latencySeconds = 1
            options.logSeconds = 2
            options.waitRequests = 1
            options.lateAnswerBytes = 32_000_000
        }
        if let rounds { options.rounds = rounds }
        if let bytes { options.bytes = bytes }
        if let big { options.big = big }
        if let logSeconds { options.logSeconds = logSeconds }
        return options
    }

    /// `123`, `500k`, `500MB`, `2G`, `1GiB`: decimal units by default, binary with `i`.
    static func parseSize(_ text: String) -> Int? {
        let digits = text.prefix { $0.isNumber || $0 == "." }
        guard let number = Double(digits), number >= 0 else { return nil }
        let unit = text.dropFirst(digits.count).lowercased()
        let factor: Double? =
            switch unit {
            case "", "b": 1
            case "k", "kb": 1e3
            case "m", "mb": 1e6
            case "g", "gb": 1e9
            case "kib": 1_024
            case "mib": 1_048_576
            case "gib": 1_073_741_824
            default: nil
            }
        guard let factor, number * factor < 1e15 else { return nil }
        return Int(number * factor)
    }
}
