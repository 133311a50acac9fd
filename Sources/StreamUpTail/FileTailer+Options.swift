import StreamUp

extension FileTailer {
    /// Where to start in a file that exists when following starts.
    ///
    /// Thread safety: a value type; safe to pass anywhere.
    public enum StartPosition: Sendable, Hashable {
        /// Send what is already there.
        case beginning
        /// Send only what is appended from now on.
        case end
    }

    /// How a ``FileTailer`` follows its files.
    ///
    /// Thread safety: a value type.
    public struct Options: Sendable, Equatable {
        /// Paths or patterns to leave out (`PathSelection`: with a `/`, matched against the
        /// whole path; without, against the file name).
        public var excludes: [String] = []
        /// Files and directories streamup writes itself (the state file, the spool, dead
        /// letters): never followed, nor the temporary and lock files beside the state file.
        public var ownFiles: [String] = []
        /// Where to start in a file that exists when following starts, on a first run (no
        /// saved positions): its end (default) or its beginning. A file that appears later, or
        /// that saved positions do not know on a later run, is read from its beginning, as
        /// Fluent Bit does (its `read_from_head` concerns only files found at start,
        /// https://docs.fluentbit.io/manual/pipeline/inputs/tail) and Vector by default
        /// (`read_from`, https://vector.dev/docs/reference/configuration/sources/file/).
        public var startAt: StartPosition = .end
        /// The most files open at once (default 256, well under the usual 1,024 descriptors of
        /// a process); beyond it, the least recently written files are closed and wait (their
        /// inotify watch stays, so a write reopens them). A closed file that is renamed away is
        /// looked for beside its old name; one deleted before it is reopened loses what it had
        /// unread.
        public var maxOpenFiles = 256
        /// The most bytes one file sends in one turn before the next file's turn (default 64
        /// KiB: one read; a busy file cannot hold the stream for longer).
        public var readChunk = 64 * 1024
        /// A line that runs this long without a newline is sent in pieces of this size
        /// (default 1 MiB, as `StreamUploader.Options.maxRecordBytes`; keep the two equal so
        /// each piece is a record of its own).
        public var maxLineBytes = 1 << 20
        /// How long a file that vanished (renamed away or deleted) is still read after its last
        /// growth, for lines its program writes before it reopens (default 5 s, as Fluent Bit's
        /// `rotate_wait`, https://docs.fluentbit.io/manual/pipeline/inputs/tail). A new file at
        /// its name that has data ends the wait at once.
        public var rotateWait: Duration = .seconds(5)
        /// After a change wakes the tailer from a wait, how long it lets more lines gather before
        /// it reads (default 5 ms). A program that writes each line with a `write(2)` of its own
        /// then costs one read, one body chunk and one packet per batch of lines instead of per
        /// line (at 10,000 lines/s: about 50 lines per read); lines wait at most this much longer.
        /// Zero reads at once.
        public var gatherDelay: Duration = .milliseconds(5)
        /// How each file's lines join into multiline records (nil: a record per line). A
        /// file's saved position never passes a line of a record not yet acknowledged whole.
        package var multiline: MultilineRule?
        /// How each line is taken apart as a container runtime's (nil: lines are the messages).
        package var parse: ContainerLogFormat?
        /// What leaves out or changes each record's message before it is sent (nil: none); a
        /// left-out line still moves its file's saved position.
        package var filter: RecordFilter?

        public init() {}

        /// What makes the options unusable, in words; nil when they work.
        var problem: String? {
            if maxOpenFiles < 1 { return "at least one file must be allowed open (maxOpenFiles)" }
            if readChunk < 1 { return "the read chunk must be positive" }
            if maxLineBytes < 1 { return "the longest line must be positive" }
            if rotateWait < .zero { return "the rotate wait cannot be negative" }
            if let problem = multiline?.problem { return problem }
            return nil
        }
    }
}
