import StreamUp
import StreamUpHTTP
import StreamUpSystem

/// How many files (descriptors) a pipelines file needs open at once, about, against what this
/// process may open (`RLIMIT_NOFILE`, raised to the hard limit at start): `streamup run` refuses
/// a file that does not fit, in one line naming the limit and how to raise it, instead of
/// starting pipelines that would fail to connect or to watch their files (and libdispatch,
/// short of a descriptor, traps).
///
/// The counts were measured on a run of 50 `tail --state --spool` pipelines of one file each
/// (582 descriptors: about 11.4 a pipeline, 24 for the process): a pipeline's URLSession and
/// libcurl (its wake-up socket pair, epoll and timer descriptors), its buffer's wake-up pipe,
/// the tailer's inotify and wake-up pipe come to about 6; each connection is one (the window:
/// `--max-in-flight`); a spool holds 3, a state file's lock 1, each followed file 1 (a pattern
/// counts for one; `--max-open-files` bounds what a glob brings later), `journal` 3 (its
/// `journalctl` pipe and process). A little more than measured, never less.
///
/// Thread safety: stateless.
enum OpenFileBudget {
    /// What the process needs beside its pipelines (standard descriptors, the signal and
    /// timer sources, the metrics server's connections).
    static let process = 48

    /// The descriptors `file`'s pipelines need at once, about.
    static func needed(by file: PipelineFile) -> Int {
        process + file.pipelines.reduce(0) { $0 + needed(by: $1) }
    }

    /// The descriptors one pipeline needs at once, about.
    static func needed(by pipeline: PipelineFile.Pipeline) -> Int {
        let upload = pipeline.upload
        var count = 6 + upload.maxInFlight + 1
        if upload.delivery.spoolDirectory != nil { count += 3 }
        switch pipeline.command {
        case .tail(let options):
            count += options.patterns.count + (options.stateFile == nil ? 0 : 1)
        case .journal(let options):
            count += 3 + (options.stateFile == nil ? 0 : 1)
        case .heartbeat:
            break
        case .help, .version, .upload, .sink, .run:
            preconditionFailure("a pipeline is tail, journal or heartbeat")
        }
        return count
    }

    /// The line refusing `file` when its pipelines need more than `limit` (soft, hard)
    /// descriptors; nil when they fit.
    static func refusal(_ file: PipelineFile, limit: (soft: UInt64, hard: UInt64), name: String) -> String? {
        let needed = needed(by: file)
        guard limit.soft != UInt64.max, UInt64(needed) > limit.soft else { return nil }
        let raise =
            limit.soft < limit.hard
            ? "the system refused to raise the soft limit to the hard \(limit.hard)"
            : "raise the hard limit (LimitNOFILE=\(Self.suggested(needed)) in the systemd unit, `ulimit -Hn` as root, or prlimit)"
        return
            "the \(counted(file.pipelines.count, "pipeline")) of \(name) need about \(needed) open files, more than this process may open (RLIMIT_NOFILE \(limit.soft)): \(raise), or run fewer pipelines; nothing was started"
    }

    /// A limit with room: the next power of two at or above twice `needed`.
    static func suggested(_ needed: Int) -> Int {
        var limit = 1024
        while limit < needed * 2 { limit *= 2 }
        return limit
    }
}
