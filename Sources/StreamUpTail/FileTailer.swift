import Foundation
import StreamUp
import StreamUpSystem

/// Follows one file or many, `tail -F` style, and streams their lines interleaved, each line
/// whole, until the producing task is cancelled. What `streamup tail PATTERN…` runs.
///
/// ```swift
/// let tailer = try FileTailer(patterns: ["/var/log/app.log"])   // or globs, directories
/// ```
///
/// - Which files: paths, globs (`*`, `?`, `[…]`, `**`; `GlobPattern`) and directories,
///   less `excludes` (`PathSelection`). The directories the patterns reach are watched with
///   inotify, so a file that starts to match is picked up at once (no polling where inotify
///   works); a pattern that matches nothing yet, or whose directory does not exist, is waited
///   for and said once (events of kind `UploadEvent.Kind.source`).
/// - Where each file starts: on a first run at its end (or its beginning with
///   ``Options/startAt``); a file that appears later, or that the saved positions do not
///   know, from its beginning (as Fluent Bit and Vector do); a known one where its saved
///   position says (matched by device, inode and `FileFingerprint`).
/// - Each file is followed by its name: renamed away or deleted, it is read to its end
///   (and for ``Options/rotateWait`` after its last growth, for lines its program writes
///   before reopening) before a new file at its name is read; a new file at the name that has
///   data ends that wait at once. Truncated (copytruncate), it is read again from its start,
///   after what it had not sent is read from its copy; a copy of a followed file (known by its
///   first bytes) is not read from its start (`TailLoop+Copies`).
/// - Interleaving: every write holds whole lines of one file (`LineReader`), marked with the
///   file and offset, so lines never mix and positions are exact. A partial last line waits for
///   its newline; when its file is finished (rotated away or deleted, and drained) it goes out
///   with a newline added, and a `SourceEvent.unterminatedLine(path:bytes:)` says so. Files
///   take turns of at most ``Options/readChunk`` bytes (`TailScheduler`): a busy file
///   cannot starve a quiet one.
/// - Limits: at most ``Options/maxOpenFiles`` descriptors; beyond it the least recently
///   written files are closed and wait (their inotify watch stays, so a write wakes them).
///
/// As a `PositionedProducer` it resumes from saved positions and reports every file it
/// begins or stops following (`SourceChange`), so one state file serves all files and
/// forgets the ones long gone: give a `StreamUploader` a state file
/// (`StreamUploader.Options.stateFile`) and each line is delivered once across restarts.
/// Reads happen only when the upload has room.
///
/// Thread safety: configuration is immutable; what is shared with other threads (saved
/// positions, the report closure, paths and positions) is guarded by the `shared` mutex; the
/// following loop runs on one dedicated thread, which cancellation wakes via a `WakePipe`.
public final class FileTailer: Producer, PositionedProducer {
    /// The patterns as given.
    public let patterns: [String]
    public let options: Options
    let selection: PathSelection
    let onEvent: @Sendable (UploadEvent) -> Void
    /// Makes the formatter of a file's lines (nil: lines go as they are).
    let format: (@Sendable (_ path: String) -> RecordFormatter?)?
    /// With ``Options/parse``: makes the formatter of a file's records of one stream, given the
    /// fields to add (the path's `namespace`, `pod`, `container`, and `stream`).
    let formatFields: (@Sendable (_ path: String, _ fields: [(name: String, value: String)]) -> RecordFormatter?)?

    /// What other threads see of the tailer.
    ///
    /// Thread safety: a value type, kept in the `shared` mutex.
    struct Shared {
        var saved: [SourcePosition] = []
        var savedAt: Date?
        var report: (@Sendable (SourceChange) -> Void)?
        var times: SourceTimes?
        var paths: [SourceID: String] = [:]
        var positions: [FileIdentity: SourcePosition] = [:]
        var hasStarted = false
        var isRunning = false
    }
    private let shared = Mutex(Shared())

    /// A tailer of what `patterns` select; `onEvent` gets what it says about the files (events
    /// of kind `UploadEvent.Kind.source`).
    /// - Throws: `StreamUpError` `.invalidConfiguration` for no pattern, an empty one, or
    ///   options that cannot work.
    /// - Parameters:
    ///   - patterns: files, globs (`*`, `?`, `[…]`, `**`) and directories to follow.
    ///   - options: exclusions, start position and limits.
    ///   - onEvent: notices about the files (waiting, gone, skipped), from the tailer's thread.
    ///   - format: makes the formatter for the lines of the file at a path, so each line
    ///     becomes a record naming its file (nil: lines go as they are); see
    ///     `Receiver.formatter(path:fields:labels:)`.
    public convenience init(
        patterns: [String], options: Options = Options(), onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in },
        format: (@Sendable (_ path: String) -> RecordFormatter?)? = nil
    ) throws {
        try self.init(patterns: patterns, options: options, onEvent: onEvent, format: format, formatFields: nil)
    }

    /// A tailer as above; with ``Options/parse``, `formatFields` makes the formatter of a file's
    /// records of one stream, given the fields to add.
    package init(
        patterns: [String], options: Options, onEvent: @escaping @Sendable (UploadEvent) -> Void,
        format: (@Sendable (_ path: String) -> RecordFormatter?)?,
        formatFields: (@Sendable (_ path: String, _ fields: [(name: String, value: String)]) -> RecordFormatter?)?
    ) throws {
        if let problem = options.problem { throw StreamUpError(.invalidConfiguration, problem) }
        self.patterns = patterns
        self.options = options
        self.format = format
        self.formatFields = formatFields
        self.onEvent = onEvent
        selection = try PathSelection(includes: patterns, excludes: options.excludes, ownFiles: options.ownFiles) { path in
            ((try? FileStatus.of(path: path, throwing: StreamUpError.self)) ?? nil)?.isDirectory ?? false
        }
    }

    /// Continues each file the saved positions know where they say (call before `produce`);
    /// `savedAt`, when the positions were saved, finds the files rotated away after a followed
    /// file that is gone.
    package func resume(from positions: [SourcePosition], savedAt: Date?) {
        shared.withLock { state in
            state.saved = positions
            state.savedAt = savedAt
        }
    }

    /// The path the file `source` was last read at; nil for a file not followed (any more).
    package func path(of source: SourceID) -> String? {
        shared.withLock { $0.paths[source] }
    }

    /// Keeps `report` for the files it begins and stops following (call before `produce`).
    package func reportSources(to report: @escaping @Sendable (SourceChange) -> Void) {
        shared.withLock { $0.report = report }
    }

    /// Times each file's records from `times`, so lines read again after a restart keep the
    /// times they had (call before `produce`).
    package func timeRecords(with times: SourceTimes) {
        shared.withLock { $0.times = times }
    }

    /// How many files are followed now, for `--metrics`.
    package var followedFileCount: Int {
        shared.withLock { $0.paths.count }
    }

    /// Where each followed file stands: the offset up to which its lines went into the writer.
    /// Save these after the server acknowledged everything (one request) to resume there.
    package var positions: [SourcePosition] {
        shared.withLock { state in state.positions.values.sorted { $0.path < $1.path } }
    }

    /// Whether the first walk of the patterns is done (every file found then has its start).
    var hasStarted: Bool {
        shared.withLock { $0.hasStarted }
    }

    /// Follows the selected files until the task is cancelled. Call it once.
    /// - Throws: `CancellationError` when cancelled; `StreamUpError` when the upload stopped
    ///   reading, when a tailer runs twice, or when a file operation failed beyond one file.
    public func produce(into writer: StreamWriter) async throws {
        let saved = try shared.withLock { state throws(StreamUpError) -> SavedPositions in
            guard !state.isRunning else { throw StreamUpError(.invalidConfiguration, "a file tailer runs once; create a new one") }
            state.isRunning = true
            return SavedPositions(state.saved, savedAt: state.savedAt)
        }
        let wake = try WakePipe("cannot create the follower's wake-up pipe", throwing: StreamUpError.self)
        // The loop's thread has finished when runBlocking returns: nobody polls the pipe then.
        defer { wake.close() }
        try await withTaskCancellationHandler {
            try await writer.runBlocking { [self] blocking in
                var loop = TailLoop(tailer: self, watcher: TailWatcher(wake: wake), wake: wake, saved: saved)
                guard format != nil || options.multiline != nil || options.parse != nil || options.filter != nil else { try loop.run(blocking) }
                let streamFormatter = formatFields.map { make in
                    { [self] (source: SourceID, stream: String) -> RecordFormatter? in
                        path(of: source).flatMap { path in make(path, ContainerPath.fields(of: path) + [(name: "stream", value: stream)]) }
                    }
                }
                let formatting = FormattingLineSink(
                    blocking, maxLine: options.maxLineBytes, multiline: options.multiline, parse: options.parse,
                    makeStreamFormatter: streamFormatter, filter: options.filter
                ) { [self] source in
                    var formatter = format.flatMap { format in path(of: source).flatMap(format) }
                    if let times = shared.withLock({ $0.times }) { formatter?.sourceTimes = (times, source) }
                    return formatter
                }
                try loop.run(formatting)
            }
        } onCancel: {
            wake.signal()
        }
    }

    // MARK: From the loop

    func report(_ change: SourceChange) {
        let report = shared.withLock { $0.report }
        report?(change)
    }

    func say(_ event: SourceEvent) {
        onEvent(.source(event))
    }

    func publish(_ tailed: TailedFile) {
        let position = tailed.position
        shared.withLock { state in
            // A file that started empty changes its source (its fingerprint) with its first
            // bytes: the old source names no file any more.
            if let earlier = state.positions[tailed.identity]?.source, earlier != position.source { state.paths[earlier] = nil }
            state.paths[position.source] = position.path
            state.positions[tailed.identity] = position
        }
    }

    func unpublish(_ tailed: TailedFile) {
        shared.withLock { state in
            state.positions[tailed.identity] = nil
            state.paths[tailed.sourceID] = nil
        }
    }

    func markStarted() {
        shared.withLock { $0.hasStarted = true }
    }
}
