/// Paragraphs the commands' help texts share, written once.
///
/// Thread safety: constants.
enum HelpText {
    /// How sizes and durations are written, for every command that takes them.
    static let units = """
        Sizes: bytes or k/KiB, m/MiB, g/GiB (1024-based), kb, mb, gb (1000-based): 64k, 8MiB, 1gb.
        Durations: ms, s, m, h (250ms, 0.5s, 10s, 5m, 24h); a bare number is seconds.
        """

    /// The exit statuses of the commands that upload (streamup, tail, heartbeat), after
    /// `first`, the line for 0; `streamup help exit` has them in full.
    static func uploadExitStatuses(success first: String) -> String {
        """
        exit status:
          0   \(first)
          1   another answer (one line: the status and the answer's start), or --dead-letter kept some
          2   no answer: refused or lost connection, timeout, retries run out, shutdown timeout
          64  usage error, found before anything is sent (also a bad URL, a closed stdin)
          74  a file failed (stdout, -o FILE, spool, state file) or is another streamup's
          130 a second SIGINT/SIGTERM: one line says what was lost or kept (SIGHUP acts as SIGTERM)
        """
    }
}
