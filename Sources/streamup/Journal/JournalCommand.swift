import Foundation
import StreamUp
import StreamUpJournal

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
                group: .input, help: "save where each journal sequence stands once acknowledged; go on there at restart"
            ) { options, value in
                options.stateFile = value
            },
        ] + UploadOptions.table.filter { !$0.names.contains { $0.hasPrefix("--multiline") || $0 == "--parse" } }.map { $0.lifted(\JournalOptions.upload) }

    /// Which journal and which of its entries.
    var selection: JournalSelection {
        JournalSelection(directory: directory, units: units, priority: priority)
    }

    static let help = """
        usage: streamup journal [options] [URL...]

        Follows the systemd journal and streams each entry as one record to URL (without URL:
        to a local sink). The record is the entry's MESSAGE with its own time (when it was
        written, not when it was read); with --format or --to it carries the entry's host
        (_HOSTNAME: each machine's entries are named after it, also in journal files gathered
        from others) and the fields unit, priority, identifier and pid, where the entry has them.

            streamup journal --unit nginx.service --state /var/lib/streamup/journal.state \\
              --to loki https://loki.example/loki/api/v1/push

          - reads through `journalctl --follow --merge --output=export` (a child process: no
            library to link, and the journal format of the host's own systemd); --merge keeps
            every boot's entries (plain --follow reads the last boot only) and, for the system
            journal, adds the journals of other machines kept under /var/log/journal;
          - starts with new entries (--from-start: everything the journal holds);
          - --drop, --keep and --redact act on the message; a message longer than a record
            (--max-record, or the receiver's limit) goes in pieces, each a record.

        With --state FILE, the position of every journal sequence (each boot of a journal kept
        in memory, each host, each systemd-journal-remote output has its own) is saved as the
        receiver acknowledges entries (with --spool: as they are safely in the spool), and the
        next start continues after them: entries written while streamup was down arrive, none
        twice, even after kill -9. A first run saves where it starts (the journal's end) at once.
        Records keep their times and names across restarts (Loki times and Elasticsearch ids
        from each entry's cursor), and without --spool the stream keeps its id and offsets (the
        sink stores entries read again once; another record format, filter or preset starts a
        new stream). A saved position that is not a journalctl cursor is not used (one line
        says what was done); one no longer in the journal (removed, another machine's) goes on
        from that entry's time. journalctl killed or failing ends streamup (exit 2).

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
            session.say(problem)
            return ExitStatus.usage
        }
        let upload = options.upload
        let records = JournalRecords(filter: upload.records.filter) { host, fields, severity in
            try upload.multilineFormatter(extra: fields, host: host, severity: severity)
        }
        var delivery = options.upload
        do {
            try records.check()
            // Entries read again after a restart go at the offsets they were sent at.
            if let stateFile = options.stateFile, delivery.delivery.spoolDirectory == nil {
                delivery.delivery.streamID = JournalStream.id(continuing: try? SourceState.load(from: stateFile), digest: try records.digest())
            }
        } catch {
            session.say("\(error)")
            return ExitStatus.usage
        }
        let journal = JournalProducer(
            selection: options.selection, fromStart: options.fromStart, records: records,
            spawn: { process, arguments in try ExecShim.run(process, executable: "/usr/bin/env", arguments: arguments) }, onNotice: { session.say($0) })
        let delivering = UploadSession(delivery, supervision: supervision)
        return await delivering.withTarget { url in
            await delivering.run(to: url, producer: journal, stateFile: options.stateFile).status
        }
    }
}
