import Foundation
import StreamUpSystem

/// Follows a file by name, `tail -F` style, and streams every byte appended to it, in order and
/// exactly once, until the producing task is cancelled.
///
/// - Start: at the end of the file by default (what is there is not sent), or at its beginning
///   with `.beginning`, or where the saved positions given to ``resume(from:)`` say (a
///   ``ReliableUploader`` with a state file does that). A file that does not exist yet is
///   waited for and read from its start.
/// - Rotation by rename (logrotate `create`): the old file is kept open and read on, even while
///   the new one is empty, since the writing program may not have reopened yet. Once the file at
///   the name has data, the old one is drained to its end and closed, and the new one is read
///   from its start. Bytes written to the old file after that are not read.
/// - Deletion and re-creation: the same as rotation; the deleted file is drained first.
/// - Truncation (logrotate `copytruncate`): a file shorter than the offset read so far is read
///   again from 0. Like `tail`, a file truncated and refilled past that offset before the
///   follower looks is not noticed.
///
/// Reads happen only when the writer's buffer has space, straight into it (`pread(2)`, no
/// allocation per read), so a slow server stalls the follower instead of growing memory.
/// Changes are seen through inotify on Linux (an appended line reaches the writer within
/// milliseconds); where inotify is unavailable the follower polls every 250 ms. See
/// `FileWatcher`.
///
/// To continue across restarts exactly where the server's acknowledgements stand, give a
/// ``ReliableUploader`` a state file (``ReliableUploader/Options/stateFile``): it saves the
/// follower's positions once their bytes are safe and hands them back on the next start.
/// `produce` is called once per follower.
///
/// Thread safety: configuration is immutable; the position is guarded by the `progress` mutex
/// and readable from any thread; the following loop runs on one dedicated thread, which
/// cancellation wakes through a `WakePipe`.
public final class FileFollower: PositionedProducer {
    /// Where to start in a file that exists when following starts.
    ///
    /// Thread safety: a value type; safe to pass anywhere.
    public enum StartPosition: Sendable, Hashable {
        /// Send what is already there.
        case beginning
        /// Send only what is appended from now on.
        case end
    }

    /// The followed path.
    public let path: String
    /// Where to start when there is no usable saved state.
    public let startAt: StartPosition
    /// The saved state to resume from; ignored when its path is not ``path`` (then ``startAt``
    /// applies). A ``ReliableUploader`` with a state file sets it through ``resume(from:)``.
    package var initialState: FollowState? { progress.withLock { $0.initialState } }
    /// The most bytes asked for per `pread(2)`.
    public let readSize: Int
    /// Turns each line into a record (nil: the file's bytes go as they are, read in place).
    public let format: RecordFormatter?

    /// What the follower reports about itself.
    ///
    /// Thread safety: a value type, kept in the `progress` mutex.
    struct Progress {
        var position: FollowPosition?
        /// Where to start: the saved state given at creation or by ``FileFollower/resume(from:)``.
        var initialState: FollowState?
        var hasStarted = false
        var hasEmptyReplacement = false
    }
    private let progress: Mutex<Progress>

    /// Creates a follower of `path`, starting at `startAt` (or where ``resume(from:)`` says).
    /// With `format`, each line becomes a record (a line is sent once its `\n` is there; a last
    /// line without one goes when its file is left behind for a rotated one).
    public convenience init(path: String, startAt: StartPosition = .end, readSize: Int = 64 * 1024, format: RecordFormatter? = nil) {
        self.init(path: path, startAt: startAt, state: nil, readSize: readSize, format: format)
    }

    /// A follower that starts where `state` says (one saved for another path is ignored).
    package init(path: String, startAt: StartPosition = .end, state: FollowState?, readSize: Int = 64 * 1024, format: RecordFormatter? = nil) {
        precondition(readSize > 0, "readSize must be positive")
        self.path = path
        self.format = format
        self.startAt = startAt
        self.progress = Mutex(Progress(initialState: state))
        self.readSize = readSize
    }

    /// The file being read and the offset delivered into the writer so far; nil until a file
    /// has been opened.
    package var position: FollowPosition? {
        progress.withLock { $0.position }
    }

    /// ``position`` as a state to save; nil until a file has been opened.
    package var state: FollowState? {
        position.map { FollowState(path: path, position: $0) }
    }

    /// Continues where the saved positions say (the most recent one read at this follower's
    /// path, or recovered from a spool), as ``PositionedProducer`` asks. Call it before the
    /// follower starts.
    public func resume(from positions: [SourcePosition]) {
        guard let latest = positions.last(where: { $0.path == path || $0.path.isEmpty }) else { return }
        progress.withLock {
            $0.initialState = FollowState(path: path, device: latest.source.device, inode: latest.source.inode, offset: latest.offset)
        }
    }

    /// Every file this follower reads was read at its path.
    public func path(of source: SourceID) -> String? { path }

    /// Whether the follower has decided where to start (opened the file, or found it missing
    /// and begun waiting for it).
    var hasStarted: Bool {
        progress.withLock { $0.hasStarted }
    }

    /// Whether a new, still empty file is at the name while the old one is still read (after a
    /// rotation, before the writing program has reopened).
    var hasEmptyReplacement: Bool {
        progress.withLock { $0.hasEmptyReplacement }
    }

    /// Follows ``path`` until the task is cancelled.
    /// - Throws: `CancellationError` when cancelled; ``StreamUpError`` when the upload stopped
    ///   reading or a file operation failed (`.io`), or the path is not a regular file
    ///   (`.invalidConfiguration`).
    public func produce(into writer: StreamWriter) async throws {
        let wake = try WakePipe("cannot create the follower's wake-up pipe", throwing: StreamUpError.self)
        // The loop's thread has finished when runBlocking returns: nobody polls the pipe then.
        defer { wake.close() }
        try await withTaskCancellationHandler {
            try await writer.runBlocking { [self] blocking in
                var loop = FollowLoop(follower: self, watcher: FileWatcher(path: path, wake: wake), wake: wake)
                try loop.run(blocking)
            }
        } onCancel: {
            wake.signal()
        }
    }

    fileprivate func publish(_ position: FollowPosition?) {
        progress.withLock { $0.position = position }
    }

    fileprivate func publish(hasEmptyReplacement: Bool) {
        progress.withLock { $0.hasEmptyReplacement = hasEmptyReplacement }
    }

    fileprivate func markStarted() {
        progress.withLock { $0.hasStarted = true }
    }
}

/// The following loop: which file is read, at which offset, and when to switch.
///
/// Thread safety: not `Sendable`; lives and runs on the follower's thread only.
private struct FollowLoop: ~Copyable {
    let follower: FileFollower
    let watcher: FileWatcher
    let wake: WakePipe
    /// The file being read, and the offset up to which it went into the writer.
    var file: ReadOnlyFile?
    var offset: Int64 = 0
    /// The identity of a new, still empty file at the name while the old one is still read.
    var pending: FileIdentity?
    /// Lines made into records (formatted following only).
    var lines: LineRecords?
    /// Where formatted following reads a piece of the file.
    var scratch: [UInt8] = []

    init(follower: FileFollower, watcher: FileWatcher, wake: WakePipe) {
        self.follower = follower
        self.watcher = watcher
        self.wake = wake
        if let format = follower.format {
            lines = LineRecords(formatter: format)
            scratch = [UInt8](repeating: 0, count: follower.readSize)
        }
    }

    mutating func run(_ writer: BlockingStreamWriter) throws -> Never {
        try start()
        follower.markStarted()
        while true {
            try wake.checkCancelled()
            if file == nil, let named = try ReadOnlyFile.open(follower.path) {
                adopt(named, at: 0)
            }
            if file != nil, try catchUp(writer) { continue }
            try watcher.wait()
        }
    }

    /// Opens the first file: where the saved state says, else at ``FileFollower/startAt``.
    private mutating func start() throws {
        let path = follower.path
        let named = try ReadOnlyFile.open(path)
        guard let saved = follower.initialState, saved.path == path else {
            if let named {
                adopt(named, at: follower.startAt == .end ? try named.status().size : 0)
            }
            return
        }
        if let named, let resume = saved.resumeOffset(for: named.identity, size: try named.status().size) {
            adopt(named, at: resume)
        } else if let rotated = try Self.openRotated(saved) {
            // The file at the name (if any) is switched to once this one is drained.
            adopt(rotated.file, at: rotated.offset)
        } else if let named {
            adopt(named, at: 0)
        }
    }

    /// The saved file under its rotated name, with the offset to resume at.
    private static func openRotated(_ saved: FollowState) throws -> (file: ReadOnlyFile, offset: Int64)? {
        guard let rotatedPath = RotatedFileLookup.path(of: saved.identity, near: saved.path),
            let rotated = try ReadOnlyFile.open(rotatedPath),
            let resume = saved.resumeOffset(for: rotated.identity, size: try rotated.status().size)
        else { return nil }
        return (rotated, resume)
    }

    /// Reads the current file to its end, then handles truncation and replacement. Returns true
    /// when the loop should go on at once (offset reset, or file closed for the new one).
    private mutating func catchUp(_ writer: BlockingStreamWriter) throws -> Bool {
        guard let current = file else { return false }
        try readToEnd(writer)
        if try current.status().size < offset {
            // Truncated: what was held of a partial line is gone with it.
            lines?.discardPartialLine()
            offset = 0
            publish()
            return true
        }
        guard let named = try FileStatus.of(path: follower.path, throwing: StreamUpError.self), named.isRegularFile,
            named.identity != current.identity
        else {
            forgetPending()
            return false
        }
        guard named.size > 0 else {
            // A new file, still empty: the writer may not have reopened yet; keep reading the
            // old one, and watch the new one so its first byte wakes us.
            if pending != named.identity {
                pending = named.identity
                watcher.watchPending()
                follower.publish(hasEmptyReplacement: true)
            }
            return false
        }
        // The writer moved on to the new file: whatever reached the old one came first, an
        // unfinished last line included.
        try readToEnd(writer)
        try flushPartialLine(writer)
        forgetPending()
        watcher.unwatchCurrent()
        file = nil
        return true
    }

    /// Writes the current file from `offset` to its end into the writer, as space allows.
    private mutating func readToEnd(_ writer: BlockingStreamWriter) throws {
        guard let current = file else { return }
        if lines != nil { return try readRecordsToEnd(writer, current) }
        let readSize = follower.readSize
        while true {
            try wake.checkCancelled()
            let from = offset
            let mark = SourceMark.verbatim(SourceID(device: current.identity.device, inode: current.identity.inode), from: from)
            let count = try writer.fill(maxLength: readSize, mark: mark) { space in
                try current.read(into: space, at: from)
            }
            if count == 0 { return }
            offset += Int64(count)
            publish()
        }
    }

    /// Formatted following: reads pieces of the file and writes each whole line as a record,
    /// marked with the file bytes it came from.
    private mutating func readRecordsToEnd(_ writer: BlockingStreamWriter, _ current: ReadOnlyFile) throws {
        let source = SourceID(device: current.identity.device, inode: current.identity.inode)
        while true {
            try wake.checkCancelled()
            let from = offset
            let count = try scratch.withUnsafeMutableBytes { try current.read(into: $0, at: from) }
            if count == 0 { return }
            let records = scratch.withUnsafeBytes { lines!.take(UnsafeRawBufferPointer(rebasing: $0[..<count]), from: from, readAt: Date()) }
            for record in records {
                try writer.write(record.bytes, mark: SourceMark(source: source, start: record.start, end: record.end))
            }
            offset += Int64(count)
            publish()
        }
    }

    /// Writes the held partial line of the current file as records (it is left behind).
    private mutating func flushPartialLine(_ writer: BlockingStreamWriter) throws {
        guard let current = file, let records = lines?.flush(readAt: Date()) else { return }
        let source = SourceID(device: current.identity.device, inode: current.identity.inode)
        for record in records {
            try writer.write(record.bytes, mark: SourceMark(source: source, start: record.start, end: record.end))
        }
    }

    /// Makes `opened` the file read, from `start`; it is watched before it is read.
    private mutating func adopt(_ opened: ReadOnlyFile, at start: Int64) {
        watcher.watchCurrent(descriptor: opened.descriptor)
        file = opened
        offset = start
        publish()
    }

    private mutating func forgetPending() {
        guard pending != nil else { return }
        pending = nil
        watcher.unwatchPending()
        follower.publish(hasEmptyReplacement: false)
    }

    private func publish() {
        follower.publish(file.map { current in
            FollowPosition(device: current.identity.device, inode: current.identity.inode, offset: offset)
        })
    }
}
