/// Paragraphs the commands' help texts share, written once.
///
/// Thread safety: constants.
enum HelpText {
    /// How sizes and durations are written, for every command that takes them.
    static let units = """
        Sizes: bytes, or with k/KiB, m/MiB, g/GiB (1024-based) or kb, mb, gb (1000-based):
        65536, 64k, 8MiB, 1gb. Durations: ms, s, m, h (250ms, 0.5s, 10s, 5m, 24h); a bare
        number is seconds.
        """

    /// The exit statuses of the commands that upload (streamup, tail, heartbeat), after
    /// `first`, the line for 0.
    static func uploadExitStatuses(success first: String) -> String {
        """
        exit status:
          0   \(first)
          1   the server answered another status (one line on stderr: the status and the
              start of the body, or a redirect's Location), or segments were kept with
              --dead-letter, or a receiver (--to) refused records
          2   no answer: refused or lost connection, timeout, retries run out, cancelled,
              or the shutdown timeout passed
          64  usage error, found before anything is sent (also a bad URL, a closed stdin, an
              -o FILE whose directory is missing or not writable)
          74  a file or output failed while running: writing the answer to stdout (closed, or
              its reader gone) or to -o FILE, the spool, the state file, the local sink;
              or at start: a spool or state file in use by another streamup or not
              writable, tail's files all there but unreadable
          130 a second SIGINT/SIGTERM (one line says what was lost, or where it is kept);
              SIGHUP stops as SIGTERM does; SIGUSR1, SIGUSR2 and SIGALRM are ignored
        """
    }
}
