/// Turns argv (without the program name) into a ``Command``; a pure function.
///
/// Thread safety: stateless.
enum CommandLineParser {
    static func parse(_ arguments: [String]) throws(UsageError) -> Command {
        switch arguments.first {
        case "sink":
            return try parseSink(Array(arguments.dropFirst()))
        case "heartbeat":
            return try parseHeartbeat(Array(arguments.dropFirst()))
        case "tail":
            return try parseTail(Array(arguments.dropFirst()))
        case "help":
            return .help(try HelpTopic.page(Array(arguments.dropFirst())))
        case "journal":
            return try parseJournal(Array(arguments.dropFirst()))
        case "run":
            return try parseRun(Array(arguments.dropFirst()))
        default:
            return try parseUpload(arguments)
        }
    }

    private static func wantsHelp(_ arguments: [String]) -> Bool {
        let options = arguments.prefix { $0 != "--" }
        return options.contains("-h") || options.contains("--help")
    }

    /// `--version` anywhere among a command's options (before `--`): the version, whatever else.
    private static func wantsVersion(_ arguments: [String]) -> Bool {
        let options = arguments.prefix { $0 != "--" }
        return options.contains("-V") || options.contains("--version")
    }

    static func parseUpload(_ arguments: [String]) throws(UsageError) -> Command {
        if wantsHelp(arguments) { return .help(UploadOptions.help) }
        if wantsVersion(arguments) { return .version }
        var options = UploadOptions()
        let (positional, rest) = try parseOptions(arguments, table: UploadOptions.table, into: &options)
        let all = positional + (rest ?? [])
        if all.count > 1, let other = all.first(where: { !TailOptions.isURL($0) }) {
            throw UsageError("expected URLs, got '\(other)', which is not an http or https URL")
        }
        options.setURLs(all)
        try options.validate()
        return .upload(options)
    }

    static func parseSink(_ arguments: [String]) throws(UsageError) -> Command {
        if wantsHelp(arguments) { return .help(SinkOptions.help) }
        if wantsVersion(arguments) { return .version }
        var options = SinkOptions()
        let (positional, rest) = try parseOptions(arguments, table: SinkOptions.table, into: &options)
        if let extra = (positional + (rest ?? [])).first {
            throw UsageError("sink: unexpected argument '\(extra)'")
        }
        return .sink(options)
    }

    static func parseHeartbeat(_ arguments: [String]) throws(UsageError) -> Command {
        if wantsHelp(arguments) { return .help(HeartbeatOptions.help) }
        if wantsVersion(arguments) { return .version }
        var options = HeartbeatOptions()
        let (positional, command) = try parseOptions(arguments, table: HeartbeatOptions.table, into: &options)
        if let other = positional.first(where: { !TailOptions.isURL($0) }), positional.count > 1 {
            throw UsageError("heartbeat: '\(other)' is not an http or https URL (put a command after --)")
        }
        options.upload.setURLs(positional)
        if let command {
            guard !command.isEmpty else { throw UsageError("heartbeat: '--' must be followed by a command") }
            options.command = command
        }
        try options.upload.validate()
        return .heartbeat(options)
    }

    static func parseJournal(_ arguments: [String]) throws(UsageError) -> Command {
        if wantsHelp(arguments) { return .help(JournalOptions.help) }
        if wantsVersion(arguments) { return .version }
        var options = JournalOptions()
        let (positional, rest) = try parseOptions(arguments, table: JournalOptions.table, into: &options)
        let all = positional + (rest ?? [])
        if let other = all.first(where: { !TailOptions.isURL($0) }) {
            throw UsageError("journal: '\(other)' is not an http or https URL (the journal is chosen with --directory, --unit, --priority)")
        }
        options.upload.setURLs(all)
        try options.upload.validate()
        if options.stateFile != nil && options.upload.delivery.singleRequest {
            throw UsageError("journal: --state keeps what the receiver acknowledged: it needs segments, not --single-request")
        }
        return .journal(options)
    }

    static func parseTail(_ arguments: [String]) throws(UsageError) -> Command {
        if wantsHelp(arguments) { return .help(TailOptions.help) }
        if wantsVersion(arguments) { return .version }
        var options = TailOptions()
        let (positional, rest) = try parseOptions(arguments, table: TailOptions.table, into: &options)
        let all = positional + (rest ?? [])
        let urls = all.filter(TailOptions.isURL)
        options.patterns = all.filter { !TailOptions.isURL($0) }
        guard !options.patterns.isEmpty else {
            throw UsageError("tail: expected at least one FILE or PATTERN to follow (see --help)")
        }
        if let empty = options.patterns.first(where: \.isEmpty) {
            throw UsageError("tail: '\(empty)' is not a file or pattern")
        }
        options.upload.setURLs(urls)
        try options.upload.validate()
        return .tail(options)
    }
}
