import StreamUp
import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The tailer's loop: walk the patterns when names change, give ready files their turns, finish
/// files that vanished, and sleep on inotify until something happens.
///
///     ┌─▶ rescan (if a watched name changed) ─▶ turns, round robin ─▶ finish vanished files ─┐
///     └──────────── wait: inotify events, or 1 s (250 ms while something is unwatched) ◀─────┘
///
/// Thread safety: not copyable, confined to the tailer's thread; talks to other threads only
/// through the ``FileTailer`` (under its mutex) and the writer.
struct TailLoop: ~Copyable {
    /// Timeout of a wait while everything is watched, in milliseconds.
    static let safetyInterval: CInt = 1000
    /// Timeout of a wait while something is not watched, in milliseconds.
    static let pollInterval: CInt = 250

    let tailer: FileTailer
    let options: FileTailer.Options
    let watcher: TailWatcher
    let wake: WakePipe
    let reader: LineReader
    var scheduler: TailScheduler<FileIdentity>
    var files: [FileIdentity: TailedFile] = [:]
    /// Files that vanished and are being drained (kept open whatever the limit).
    var vanished: Set<FileIdentity> = []
    /// Files that had something to read but no descriptor.
    var waitingForSlot: Set<FileIdentity> = []
    /// Copies being read for the tail of their truncated file, which waits until they reach
    /// their end (`TailLoop+Copies`).
    var copyTails: Set<FileIdentity> = []
    var saved: SavedPositions
    var notices = Notices()
    var rescanNeeded = true
    var isFirstScan = true
    var events: [TailWatcher.Event] = []
    let clock = ContinuousClock()
    /// When files were last looked at without an event (``checkUnwatched()``).
    var lastCheck = ContinuousClock.now

    /// What has been said once already.
    ///
    /// Thread safety: a value type, part of the loop.
    struct Notices {
        /// Patterns (by index) said to match nothing or to miss their directory.
        var waiting: Set<Int> = []
        var skipped: Set<String> = []
        var unwatched = false
        var overLimit = false
        var outOfDescriptors = false
    }

    init(tailer: FileTailer, watcher: TailWatcher, wake: WakePipe, saved: SavedPositions) {
        self.tailer = tailer
        self.options = tailer.options
        self.watcher = watcher
        self.wake = wake
        self.saved = saved
        reader = LineReader(chunk: tailer.options.readChunk, maxLine: tailer.options.maxLineBytes)
        scheduler = TailScheduler(maxOpen: tailer.options.maxOpenFiles)
    }

    mutating func run(_ writer: any LineSink) throws -> Never {
        while true {
            try wake.checkCancelled()
            if rescanNeeded { try rescan() }
            try serveTurns(writer)
            try finishVanished(writer)
            try writer.expire(at: clock.now)
            if scheduler.hasReady || rescanNeeded { continue }
            events.removeAll(keepingCapacity: true)
            try watcher.wait(timeout: waitTimeout(until: writer.deadline), into: &events)
            // Woken by a change: let the lines of a burst gather (FileTailer.Options.gatherDelay).
            if !events.isEmpty && options.gatherDelay > .zero {
                usleep(useconds_t(options.gatherDelay.nanoseconds / 1_000))
            }
            handle(events)
            // Also while events keep coming: files without a watch would wait for ever.
            let interval = Duration.milliseconds(Int64(safetyInterval))
            if clock.now - lastCheck >= interval {
                lastCheck = clock.now
                checkUnwatched()
            }
        }
    }

    /// How often files are looked at without an event: 1 s while everything is watched,
    /// 250 ms while something is not.
    private var safetyInterval: CInt {
        watcher.isFullyWatched ? Self.safetyInterval : Self.pollInterval
    }

    // MARK: Turns

    /// Gives every ready file its turn, round after round, until none is ready; between rounds
    /// that leave a file with more to read, it collects events that came meanwhile (without
    /// waiting), so a file that starts to write while others catch up gets its turn in the
    /// next round. Once every file is read to its end, events wait for the loop's next wait
    /// and its gather delay: a file written line by line is read a batch at a time, not a
    /// line at a time as each line's event arrives during the turns.
    private mutating func serveTurns(_ writer: any LineSink) throws {
        var turnsLeftInRound = scheduler.readyCount
        while let key = scheduler.nextTurn() {
            try wake.checkCancelled()
            if var tailed = files[key], tailed.heldBy == nil {
                if try acquireDescriptor(&tailed) {
                    try takeTurn(&tailed, writer)
                } else {
                    waitingForSlot.insert(key)
                }
                files[key] = tailed
            }
            turnsLeftInRound -= 1
            if turnsLeftInRound <= 0 {
                guard scheduler.hasReady else { return }
                events.removeAll(keepingCapacity: true)
                try watcher.wait(timeout: 0, into: &events)
                handle(events)
                if rescanNeeded { return }
                turnsLeftInRound = scheduler.readyCount
            }
        }
    }

    /// One turn of an open file: whole lines into the writer, then where it stands.
    private mutating func takeTurn(_ tailed: inout TailedFile, _ writer: any LineSink) throws {
        try ensureFingerprint(&tailed)
        if tailed.copyOf != nil { return try checkCopy(&tailed) }
        guard tailed.fingerprint != 0 else {
            // Empty when looked at: no byte may go out before the fingerprint of the first ones
            // is known (they are marked with it); the write that fills it brings an event.
            tailed.atEnd = true
            return
        }
        let before = (tailed.offset, tailed.scanned, tailed.pending)
        let turn = try reader.turn(&tailed, into: writer)
        if (tailed.offset, tailed.scanned) != (before.0, before.1) || tailed.pending > before.2 {
            tailed.lastGrowth = clock.now
            scheduler.wrote(tailed.identity)
            tailer.publish(tailed)
        }
        switch turn {
        case .more:
            tailed.atEnd = false
            scheduler.markReady(tailed.identity)
        case .end:
            tailed.atEnd = true
            // A copy read up to its end lets its truncated file go on.
            if copyTails.remove(tailed.identity) != nil { releaseHeld(by: tailed.identity) }
            // A descriptor may be free now (this file has nothing to read): let waiting files ask.
            for waiting in waitingForSlot { scheduler.markReady(waiting) }
            waitingForSlot.removeAll()
        case .truncated:
            try restartTruncated(&tailed)
            scheduler.markReady(tailed.identity)
        }
    }

    /// A truncated file is read again from 0, under the fingerprint of its new first bytes,
    /// once what it had not sent is read from its copy, if it has one (`readTailFromCopy`).
    private mutating func restartTruncated(_ tailed: inout TailedFile) throws {
        tailer.say(.truncated(path: tailed.path))
        let old = tailed.sourceID
        let sent = tailed.offset
        tailed.offset = 0
        tailed.scanned = 0
        tailed.pending = 0
        tailed.atEnd = false
        tailed.fingerprint = 0
        if let file = tailed.file { tailed.fingerprint = try reader.fingerprint(of: file) }
        if tailed.sourceID != old {
            tailer.report(.following(tailed.position))
            tailer.report(.stopped(old))
        }
        tailer.publish(tailed)
        try readTailFromCopy(of: &tailed, sentUpTo: sent, fingerprint: old.fingerprint)
    }

    /// Gives a file that had none (it was empty) a fingerprint before its first bytes go out.
    private mutating func ensureFingerprint(_ tailed: inout TailedFile) throws {
        guard tailed.fingerprint == 0, let file = tailed.file else { return }
        let fingerprint = try reader.fingerprint(of: file)
        guard fingerprint != 0 else { return }
        let old = tailed.sourceID
        tailed.fingerprint = fingerprint
        if try !recogniseCopy(&tailed) {
            tailer.report(.following(tailed.position))
            tailer.publish(tailed)
        }
        tailer.report(.stopped(old))
    }

    // MARK: Events

    private mutating func handle(_ events: [TailWatcher.Event]) {
        for event in events {
            switch event {
            case .modified(let identity):
                // A file waiting for its turn already is read to its end then, and its turn
                // notes the growth: its further events (one per write) need nothing more.
                guard !scheduler.isReady(identity), files[identity] != nil else { continue }
                files[identity]?.lastGrowth = clock.now
                scheduler.wrote(identity)
                scheduler.markReady(identity)
            case .renamed(let identity):
                rescanNeeded = true
                if files[identity] != nil { scheduler.markReady(identity) }
            case .directoryChanged:
                rescanNeeded = true
            case .overflow:
                rescanNeeded = true
                for identity in files.keys { scheduler.markReady(identity) }
            }
        }
    }

    /// Every safety interval: open files are read once more (a safety net for missed events),
    /// closed files without a watch are checked by size, and where a watch is missing the
    /// patterns are walked again.
    private mutating func checkUnwatched() {
        for (identity, tailed) in files where tailed.heldBy == nil {
            if tailed.file != nil {
                scheduler.markReady(identity)
            } else if !watcher.isWatched(identity), let status = (try? FileStatus.of(path: tailed.path, throwing: StreamUpError.self)) ?? nil,
                status.identity == identity, status.size > tailed.offset + tailed.pending
            {
                scheduler.markReady(identity)
            }
        }
        if !watcher.isFullyWatched { rescanNeeded = true }
    }

    /// How long to sleep: until the next safety check, until a vanished file's rotate wait
    /// ends, or until `due` (a multiline record's timeout).
    private func waitTimeout(until due: ContinuousClock.Instant?) -> CInt {
        let now = clock.now
        let untilCheck = Duration.milliseconds(Int64(safetyInterval)) - (now - lastCheck)
        var timeout = max(0, Self.milliseconds(untilCheck))
        if let due { timeout = min(timeout, max(0, Self.milliseconds(due - now))) }
        for identity in vanished {
            guard let tailed = files[identity], !tailed.finishing, let since = tailed.vanishedAt else { continue }
            let ends = max(since, tailed.lastGrowth) + options.rotateWait
            timeout = min(timeout, max(0, Self.milliseconds(ends - now)))
        }
        return CInt(timeout)
    }

    /// `duration` in whole milliseconds, rounded up.
    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000 + (attoseconds % 1_000_000_000_000_000 > 0 ? 1 : 0)
    }
}
