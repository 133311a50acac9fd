import Foundation
import StreamUp

/// `streamup journal [options] [URL...]`: follow the systemd journal and stream its entries.
///
/// Thread safety: a value type.
struct JournalOptions: Sendable, Equatable {
    var upload = UploadOptions()
    /// Journal files in this directory instead of the system journal (`journalctl -D`).
    var directory: String?
    var units: [String] = []
    var priority: String?
    var fromStart = false
    var stateFile: String?

    static let table: [OptionSpec<JournalOptions>] =
        [
            .value("--directory", valueName: "DIR", group: .input, help: "read the journal files in DIR (journalctl -D), not the system's") {
                options, value in
                options.directory = value
            },
            .value("--unit", valueName: "NAME", group: .input, help: "only entries of the systemd unit NAME (repeatable; journalctl -u)") { options, value in
                options.units.append(value)
            },
            .value(
                "--priority", valueName: "LEVEL",
                group: .input, help: "only entries of LEVEL or more urgent: emerg … debug or 0-7 (journalctl -p)"
            ) { options, value throws(UsageError) in
                let names = ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"]
                guard names.contains(value) || (value.count == 1 && ("0"..."7").contains(value)) else {
                    throw UsageError("--priority: '\(value)' is not one of \(names.joined(separator: ", ")) or 0-7")
                }
                options.priority = value
            },
            .flag("--from-start", group: .input, help: "send the entries the journal holds, then follow (default: new ones)") {
                $0.fromStart = true
            },
            .value(
                "--state", valueName: "FILE",
                group: .input, help: "save the acknowledged entry's cursor; go on after it at restart"
            ) { options, value in
                options.stateFile = value
            },
        ] + UploadOptions.table.filter { !$0.names.contains { $0.hasPrefix("--multiline") || $0 == "--parse" } }.map { $0.lifted(\JournalOptions.upload) }

    /// `journalctl` and the options that select the entries.
    var selection: [String] {
        var arguments = ["journalctl"]
        if let directory { arguments += ["--directory", directory] }
        for unit in units { arguments += ["--unit", unit] }
        if let priority { arguments += ["--priority", priority] }
        return arguments
    }

    static let help = """
        usage: streamup journal [options] [URL...]

        Follows the systemd journal and streams each entry as one record to URL (without URL:
        to a local sink). The record is the entry's MESSAGE with its own time (when it was
        written, not when it was read); with --format or --to it carries the entry's host
        (_HOSTNAME) and the fields unit, priority, identifier and pid, where the entry has them.

            streamup journal --unit nginx.service --state /var/lib/streamup/journal.state \\
              --to loki https://loki.example/loki/api/v1/push

          - reads through `journalctl --follow --output=json` (a child process: no library to
            link, and the journal format of the host's own systemd);
          - starts with new entries (--from-start: everything the journal holds);
          - --drop, --keep and --redact act on the message.

        With --state FILE, the cursor of the last entry the receiver acknowledged is saved
        atomically (with --spool: of what is safely in the spool), and the next start
        continues after it: entries written while streamup was down arrive, none twice, even
        after kill -9.

        \(helpLines(for: table))
        \(HelpText.units)

        \(HelpText.uploadExitStatuses(success: "every entry read was acknowledged with a 2xx (it ends only on SIGINT/SIGTERM)"))
        """
}

/// Runs the journal command, alone or as a pipeline of `streamup run` (`supervision`).
///
/// Thread safety: runs on the caller's task.
enum JournalRunner {
    static func run(_ options: JournalOptions, supervision: UploadSession.Supervision = .alone) async -> Int32 {
        let session = UploadSession(options.upload, supervision: supervision)
        if let problem = TailRunner.stateFileProblem(options.stateFile) {
            session.say("journal: \(problem)")
            return ExitStatus.usage
        }
        let records = JournalRecords(options.upload)
        do {
            try records.check()
        } catch {
            session.say("journal: \(error)")
            return ExitStatus.usage
        }
        let journal = JournalProducer(selection: options.selection, fromStart: options.fromStart, records: records) { line in
            session.say("journal: \(line)")
        }
        return await session.withTarget { url in
            await session.run(to: url, producer: journal, stateFile: options.stateFile).status
        }
    }
}
