import Foundation
import StreamUp
import StreamUpHTTP

/// `streamup heartbeat [options] [URL] [-- COMMAND ...]`: one NDJSON record per interval.
///
/// Thread safety: a value type.
struct HeartbeatOptions: Sendable, Equatable {
    var upload = UploadOptions(contentType: "application/x-ndjson")
    var every: Duration = .seconds(10)
    var count: Int?
    var fields: [UploadConfiguration.Header] = []
    /// Run this command and beat while it runs (after `--`).
    var command: [String] = []

    static let table: [OptionSpec<HeartbeatOptions>] =
        [
            .value("--every", valueName: "DURATION", group: .input, help: "time between beats (default 10s; e.g. 500ms, 0.2s, 5m)") {
                options, value throws(UsageError) in
                options.every = try parseDuration(value, option: "--every")
            },
            .value("--count", valueName: "N", group: .input, help: "stop after N beats") { options, value throws(UsageError) in
                guard let count = Int(value), count > 0 else { throw UsageError("--count: '\(value)' is not a positive number") }
                options.count = count
            },
            .value("--field", valueName: "KEY=VALUE", group: .records, help: "add a string field to every record (repeatable)") {
                options, value throws(UsageError) in
                guard let equals = value.firstIndex(of: "="), equals != value.startIndex else {
                    throw UsageError("--field: '\(value)' is not KEY=VALUE")
                }
                let name = String(value[..<equals])
                guard !["ts", "seq", "host", "pid", "uptime_s", "skipped"].contains(name) else {
                    throw UsageError("--field: '\(name)' is a built-in field")
                }
                options.fields.append(.init(name: name, value: String(value[value.index(after: equals)...])))
            },
        ]
        + UploadOptions.table.filter {
            !$0.names.contains("--content-type") && !$0.names.contains("--field")
                && !$0.names.contains { $0.hasPrefix("--multiline") || ["--parse", "--drop", "--keep", "--redact", "--redact-with"].contains($0) }
        }.map { $0.lifted(\HeartbeatOptions.upload) }

    static let help = """
        usage: streamup heartbeat [options] [URL...] [-- COMMAND [ARG...]]

        Streams one NDJSON record per interval to URL, in acknowledged requests (segments, as
        `streamup help delivery` tells; --single-request: one long chunked request):
          {"ts":"2026-11-22T08:15:30.123Z","seq":1,"host":"web-1","pid":4242,"uptime_s":0.000,"skipped":0}
        Beats fall at start + k x interval (no drift). When the link stalls, beats are skipped
        rather than queued; the next record says how many (`skipped`).

        With `-- COMMAND`, runs the command, beats while it runs, then sends a final record
        {"event":"exit","exit_status":N,"duration_s":...}, ends the stream and exits with the
        command's status: a liveness monitor for a job, e.g. in a crontab. The command's
        standard input, output and error are its own; the monitor's answer is not printed (-o
        FILE keeps it), and beats that could not be delivered are one line on stderr, never
        another exit status. Once the command has ended, the last records get at most
        --shutdown-timeout (default 5s here) to be acknowledged. Without URL, beats go to a
        local sink.

        \(helpLines(for: table))
        SIGINT/SIGTERM: a final {"event":"stop"} record, delivered, wait for the answers (with
        a COMMAND, the signal is passed on to it instead, and its end ends the beats); one line
        on stderr says so. A second one stops at once (exit 130), saying what was lost.

        \(HelpText.units)

        \(HelpText.uploadExitStatuses(success: "the beats were acknowledged with a 2xx"))

        With -- COMMAND: the command's status, whatever became of the beats (128 + N when
        signal N ended it; 127 when it cannot be run); 64 for a usage error (the command is not
        run) and 130 for a second SIGINT/SIGTERM.
        """
}
