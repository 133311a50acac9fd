/// Which journal and which of its entries: what `journalctl` is told besides where to start.
///
/// Every command reads with `--merge`: journalctl's `--follow` otherwise implies `--boot` (since
/// systemd 250) and leaves out every boot but the last, so a journal of several boots, hosts or
/// `systemd-journal-remote` outputs would be read in part. With the system journal, `--merge`
/// also reads the journals of other machines kept under `/var/log/journal` (containers whose
/// journals are linked there), each entry with its own `_HOSTNAME`.
///
/// Thread safety: a value type.
package struct JournalSelection: Sendable, Equatable {
    /// Journal files in this directory instead of the system journal (`journalctl --directory`).
    package var directory: String?
    /// Only entries of these units (`--unit`, repeatable).
    package var units: [String]
    /// Only entries of this priority or more urgent (`--priority`).
    package var priority: String?

    package init(directory: String? = nil, units: [String] = [], priority: String? = nil) {
        self.directory = directory
        self.units = units
        self.priority = priority
    }

    /// `journalctl` and the options that select the entries.
    private var selecting: [String] {
        var arguments = ["journalctl", "--merge"]
        if let directory { arguments.append("--directory=\(directory)") }
        for unit in units { arguments.append("--unit=\(unit)") }
        if let priority { arguments.append("--priority=\(priority)") }
        return arguments + ["--output=export", "--all", "--no-pager", "--quiet"]
    }

    /// The command line that prints the last entry selected (where a first run starts).
    package var lastEntryArguments: [String] {
        selecting + ["--lines=1"]
    }

    /// The command line that follows the entries selected from `seek` on.
    package func followArguments(from seek: JournalStart.Seek) -> [String] {
        let start: [String] =
            switch seek {
            case .cursor(let cursor): ["--cursor=\(cursor.text)", "--no-tail"]
            case .afterCursor(let text): ["--after-cursor=\(text)", "--no-tail"]
            case .head: ["--no-tail"]
            case .tail: ["--lines=0"]
            }
        return selecting + ["--follow"] + start
    }
}
