/// The log shippers compared on files growing at a steady rate. Each follows the file (or the
/// directory of files, with a wildcard) from its start and sends the lines to the receiver.
///
/// - ``streamup``: `streamup tail --from-start FILE URL` (default: acknowledged segments).
/// - ``single``: the same with `--single-request` (one file only).
/// - ``tailCurl``: `tail -F -n +1 FILE | curl -sS -T - URL` (both processes measured; one file only).
/// - ``syslogNG``: syslog-ng's `http()` destination, batches of 1,000 lines, from a `file()`
///   or `wildcard-file()` source (see ``SyslogNGSetup``).
/// - ``fluentBit``: Fluent Bit's `tail` input and `http` output (see ``FluentBitSetup``), when
///   a `fluent-bit` binary is installed.
///
/// Thread safety: a value type.
enum Shipper: String, Sendable, CaseIterable {
    case streamup
    case single
    case tailCurl = "tail|curl"
    case syslogNG = "syslog-ng"
    case fluentBit = "fluent-bit"

    /// The shippers compared on `files` files: all on one file; those that follow a wildcard on many.
    static func compared(files: Int) -> [Shipper] {
        files == 1 ? allCases : [.streamup, .syslogNG, .fluentBit]
    }

    /// A name for files and directories.
    var tag: String {
        switch self {
        case .streamup: "streamup"
        case .single: "single"
        case .tailCurl: "tail-curl"
        case .syslogNG: "syslog-ng"
        case .fluentBit: "fluent-bit"
        }
    }

    /// The column heading of the shipper in the report.
    var title: String {
        switch self {
        case .streamup: "streamup tail (default: segments)"
        case .single: "streamup tail --single-request"
        case .tailCurl: "tail -F \\| curl -T - (both)"
        case .syslogNG: "syslog-ng http(), 1,000-line batches"
        case .fluentBit: "Fluent Bit tail → http"
        }
    }

    /// True when it sends the whole run as one request, which ends only when it is stopped.
    var sendsOneRequest: Bool {
        switch self {
        case .single, .tailCurl: true
        case .streamup, .syslogNG, .fluentBit: false
        }
    }

    /// The command as the report shows it; `files` is FILE for one file, `'DIR/*.log'` for many.
    func displayCommand(files: String) -> String {
        switch self {
        case .streamup: "streamup " + Self.streamupArguments(single: false, file: files, url: "URL").joined(separator: " ")
        case .single: "streamup " + Self.streamupArguments(single: true, file: files, url: "URL").joined(separator: " ")
        case .tailCurl: "tail " + Self.tailArguments(file: files).joined(separator: " ") + " | curl " + Self.curlArguments(url: "URL").joined(separator: " ")
        case .syslogNG: "syslog-ng " + SyslogNGSetup.arguments(directory: "DIR").joined(separator: " ")
        case .fluentBit: "fluent-bit " + FluentBitSetup.arguments(directory: "DIR").joined(separator: " ")
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
