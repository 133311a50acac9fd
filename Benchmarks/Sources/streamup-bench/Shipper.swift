/// The log shippers compared on a file growing at a steady rate. Each follows the file from
/// its start and sends its lines to the sink.
///
/// - ``streamup``: `streamup tail --from-start FILE URL` (default: acknowledged segments).
/// - ``single``: the same with `--single-request`.
/// - ``tailCurl``: `tail -F -n +1 FILE | curl -sS -T - URL` (both processes measured).
/// - ``syslogNG``: syslog-ng's `http()` destination, batches of 1,000 lines, from a `file()`
///   source (see ``SyslogNGSetup``).
///
/// Thread safety: a value type.
enum Shipper: String, Sendable, CaseIterable {
    case streamup
    case single
    case tailCurl = "tail|curl"
    case syslogNG = "syslog-ng"

    /// A name for files and directories.
    var tag: String {
        switch self {
        case .streamup: "streamup"
        case .single: "single"
        case .tailCurl: "tail-curl"
        case .syslogNG: "syslog-ng"
        }
    }

    /// The column heading of the shipper in the report.
    var title: String {
        switch self {
        case .streamup: "streamup tail (default: segments)"
        case .single: "streamup tail --single-request"
        case .tailCurl: "tail -F \\| curl -T - (both)"
        case .syslogNG: "syslog-ng http(), 1,000-line batches"
        }
    }

    /// True when it sends the whole run as one request, which ends only when it is stopped.
    var sendsOneRequest: Bool {
        switch self {
        case .single, .tailCurl: true
        case .streamup, .syslogNG: false
        }
    }

    /// The command as the report shows it.
    var displayCommand: String {
        switch self {
        case .streamup: "streamup " + Self.streamupArguments(single: false, file: "FILE", url: "URL").joined(separator: " ")
        case .single: "streamup " + Self.streamupArguments(single: true, file: "FILE", url: "URL").joined(separator: " ")
        case .tailCurl: "tail " + Self.tailArguments(file: "FILE").joined(separator: " ") + " | curl " + Self.curlArguments(url: "URL").joined(separator: " ")
        case .syslogNG: "syslog-ng " + SyslogNGSetup.arguments(directory: "DIR").joined(separator: " ")
        }
    }

    static func streamupArguments(single: Bool, file: String, url: String) -> [String] {
        ["tail", "--from-start"] + (single ? ["--single-request"] : []) + [file, url]
    }

    static func tailArguments(file: String) -> [String] {
        ["-F", "-n", "+1", file]
    }

    static func curlArguments(url: String) -> [String] {
        ["-sS", "-T", "-", url]
    }
}
