import Foundation
import StreamUp
import StreamUpTail

/// `streamup tail [options] PATTERN... [URL]`: follow files like `tail -F` and stream their lines.
///
/// Thread safety: a value type.
struct TailOptions: Sendable, Equatable {
    var upload = UploadOptions()
    /// Files, globs and directories to follow.
    var patterns: [String] = []
    var excludes: [String] = []
    var fromStart = false
    var stateFile: String?
    /// Forget the saved position of a file gone this long (with --state).
    var forgetAfter: Duration = .seconds(24 * 3600)
    var maxOpenFiles: Int?
    var readChunk: Int?

    static let table: [OptionSpec<TailOptions>] =
        [
            .flag(
                "--from-start",
                group: .input, help: "send what the files hold at the start, then follow (default: end)"
            ) { $0.fromStart = true },
            .value(
                "--exclude", valueName: "PATTERN",
                group: .input, help: "leave out files matching PATTERN (repeatable; no '/': file name)"
            ) { options, value in
                options.excludes.append(value)
            },
            .value("--state", valueName: "FILE", group: .input, help: "save each file's acknowledged position; go on from it at restart") { options, value in
                options.stateFile = value
            },
            .value(
                "--forget-after", valueName: "DURATION",
                group: .input, help: "with --state, forget a file gone this long (default 24h)"
            ) { options, value throws(UsageError) in
                options.forgetAfter = try parseDuration(value, option: "--forget-after")
            },
            .value(
                "--max-open-files", valueName: "N",
                group: .input, help: "keep at most N files open (default 256); the others wait"
            ) { options, value throws(UsageError) in
                guard let count = Int(value), count > 0 else { throw UsageError("--max-open-files: '\(value)' is not a positive number") }
                options.maxOpenFiles = count
            },
            .value("--read-chunk", valueName: "SIZE", group: .input, help: "the most one file sends before the next file's turn (default 64KiB)") {
                options, value throws(UsageError) in
                let size = try parseByteSize(value, option: "--read-chunk")
                guard size <= 64 << 20 else { throw UsageError("--read-chunk: '\(value)' is over 64 MiB") }
                options.readChunk = size
            },
        ] + UploadOptions.table.map { $0.lifted(\TailOptions.upload) }

    /// The library's options for these.
    var tailerOptions: FileTailer.Options {
        var tailer = FileTailer.Options()
        tailer.excludes = excludes
        tailer.ownFiles = [stateFile, upload.delivery.spoolDirectory, upload.delivery.deadLetterDirectory].compactMap { $0 }
        tailer.startAt = fromStart ? .beginning : .end
        if let maxOpenFiles { tailer.maxOpenFiles = maxOpenFiles }
        if let readChunk { tailer.readChunk = readChunk }
        // Pieces of an over-long line are records of their own only if both agree.
        if let maxRecord = upload.delivery.maxRecordBytes { tailer.maxLineBytes = maxRecord }
        tailer.multiline = upload.records.multiline
        tailer.parse = upload.records.parse
        tailer.filter = upload.records.filter
        if !upload.delivery.singleRequest {
            // A line waits for its segment's end anyway: reading a tenth of a segment time's lines
            // at once (at most 100 ms) costs a wake-up per batch instead of per few lines
            // (Benchmarks/RESULTS.md: 2.3x less CPU at 10,000 lines/s) and adds ~5% to the latency.
            let segment = upload.delivery.segmentDuration ?? StreamUploader.Options().segmentDuration
            tailer.gatherDelay = max(tailer.gatherDelay, min(.milliseconds(100), segment / 10))
        }
        return tailer
    }

    /// Whether `argument` is the URL among the positional arguments (an http or https URL).
    static func isURL(_ argument: String) -> Bool {
        let lower = argument.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    static let help = """
        usage: streamup tail [options] PATTERN... [URL...]

        Follows files like `tail -F` and streams every line appended to them, in order and
        once, to URL (the argument that starts with http:// or https://; several: endpoints,
        see `streamup --help`; without URL: to a local sink). PATTERN is a file, a directory
        (every file in it), or a glob: * and ? within a name, [abc] and [a-z] sets, ** for any
        depth of subdirectories; quote it so the shell does not expand it. Hidden files are
        matched only by a pattern that spells their dot.

            streamup tail '/var/log/app/*.log' --exclude '*.gz' https://logs.example/ingest

          - starts at the end of the files there are (--from-start: at their beginning); a file
            that appears later is read from its beginning, as Fluent Bit and Vector do;
          - picks up new files within a second (inotify on the directories; no polling where
            inotify works), and says once when a pattern matches nothing yet or its directory
            does not exist; a file it cannot read (permission denied) is skipped with one line,
            the others go on;
          - follows rename rotation: the old file is read to its end (and for 5 s after its last
            line, or until the new file has data), then the new one from its start; a deleted
            file is read to its end and dropped; follows copytruncate: the copy (app.log.1,
            known by its first bytes) is not sent again, and what the file had not sent when it
            was truncated is read from the copy, then the file from its start;
          - interleaves files only between whole lines, and fairly: each file sends at most
            --read-chunk before the next one's turn. A partial last line waits for its newline;
            when its file is rotated away or deleted it is sent with a newline added (one line
            on stderr says so);
          - keeps at most --max-open-files files open; beyond it the least recently written are
            closed and wait;
          - reads only while the upload keeps up: a slow server never makes memory grow;
            with segments (the default) it lets lines gather for a tenth of --segment-seconds
            (at most 100 ms) and reads them in one go, since they wait for their segment anyway.

        With --state FILE, where each file stands (device, inode and a fingerprint of its first
        256 bytes, so a reused inode is not taken for the old file) is saved atomically once the
        server has acknowledged the lines, and the next start continues from there: nothing
        acknowledged is sent twice, nothing is skipped; files the state does not know are read
        from their beginning, and a file rotated while streamup was down is found beside its
        old name and finished first. Files gone longer than --forget-after are forgotten. With
        --spool DIR as well, the state follows what is safely in the spool (saved every 100 ms)
        and a restart sends the spool first, then goes on from the saved positions: even after
        kill -9, every line arrives once. Without a spool, lines sent but not yet acknowledged
        when streamup stopped are read again with the times (--to loki) and document ids
        (--to elasticsearch|opensearch) they were sent with: the receiver drops the copies.
        As one request (--single-request), the state is saved when the request ends with a 2xx
        (SIGINT/SIGTERM).

        \(helpLines(for: table))
        \(HelpText.units)

        \(HelpText.uploadExitStatuses(success: "every line read was acknowledged with a 2xx (the input ends only on\n      SIGINT/SIGTERM)"))
        """
}
