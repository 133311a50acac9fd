import StreamUpHTTP

/// The one line a reload says.
///
/// Thread safety: a value type.
struct ReloadReport {
    var added: [String] = []
    var changed: [String] = []
    var removed: [String] = []
    var restarted: [String] = []
    var waiting: [String] = []
    var unchanged = 0

    var line: String {
        var parts: [String] = []
        func part(_ verb: String, _ names: [String]) {
            guard !names.isEmpty else { return }
            let held = names.filter(waiting.contains)
            let who = held == names ? "" : RunSupervision<ContinuousClock.Instant>.listed(held) + " "
            let note = held.isEmpty ? "" : " (\(who)once the earlier copy has let go of its state and spool)"
            parts.append("\(verb) \(RunSupervision<ContinuousClock.Instant>.listed(names))\(note)")
        }
        part("started", added)
        part("changed", changed)
        part("restarted", restarted)
        part("stopped", removed)
        if parts.isEmpty { return "reloaded: nothing changed (\(counted(unchanged, "pipeline")) unchanged)" }
        return "reloaded: " + parts.joined(separator: "; ") + (unchanged > 0 ? "; \(unchanged) unchanged" : "")
    }
}
