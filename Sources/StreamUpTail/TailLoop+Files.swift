import StreamUp
import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which files are followed: walking the patterns, starting, vanishing and dropping files, and
/// descriptors.
extension TailLoop {
    // MARK: Walking the patterns

    /// Walks the patterns, watches what they reach, says what is missing once, and brings the
    /// followed files in line with what was found.
    mutating func rescan() throws {
        rescanNeeded = false
        let scan = TailDiscovery.scan(tailer.selection)
        let watched = watcher.watchDirectories(scan.directories)
        for refused in watched.refused { sayUnwatched(refused.path, errno: refused.errno) }
        // A directory watched only now may have changed after the walk saw it (`mkdir -p a/b`
        // between the two): walk once more, now that its watch reports every change.
        if watched.added && watcher.usesInotify { rescanNeeded = true }
        // One word per pattern that matches nothing: its directory is missing, or no file matches.
        for (index, given) in tailer.selection.given.enumerated() where scan.matches[index, default: 0] == 0 && !scan.blocked.contains(index) {
            guard notices.waiting.insert(index).inserted else { continue }
            if let directory = scan.missingDirectories[index] {
                tailer.say(.directoryMissing(directory: directory, pattern: given))
            } else {
                tailer.say(.waitingForMatch(pattern: given))
            }
        }
        for skipped in scan.skipped where notices.skipped.insert(skipped.path).inserted {
            tailer.say(.skipped(path: skipped.path, reason: skipped.reason))
        }
        try reconcile(scan)
        if isFirstScan {
            isFirstScan = false
            tailer.markStarted()
        }
        if files.count > options.maxOpenFiles {
            if !notices.overLimit { tailer.say(.tooManyFiles(count: files.count, limit: options.maxOpenFiles)) }
            notices.overLimit = true
        } else {
            notices.overLimit = false
        }
    }

    private mutating func reconcile(_ scan: TailScan) throws {
        var seen: Set<FileIdentity> = []
        var appeared: [TailScan.Found] = []
        for found in scan.files {
            let identity = found.status.identity
            seen.insert(identity)
            guard var tailed = files[identity] else {
                appeared.append(found)
                continue
            }
            if tailed.path != found.path || tailed.hasVanished {
                // Renamed to another name that matches, or back: it is simply followed there.
                tailed.path = found.path
                tailed.vanishedAt = nil
                tailed.finishing = false
                vanished.remove(identity)
                files[identity] = tailed
                tailer.publish(tailed)
                tailer.report(.following(tailed.position))
            }
        }
        for (identity, tailed) in files where !seen.contains(identity) && !tailed.hasVanished {
            try vanish(identity)
        }
        // At start, the saved positions of the files found are set apart first: what is left
        // was rotated while nobody followed (drained before a new file at its name) or is gone.
        var candidates: [FileIdentity: [SourcePosition]] = [:]
        if isFirstScan {
            for found in appeared { candidates[found.status.identity] = saved.take(found.status.identity) }
            let gone = try adoptRotatedWhileDown()
            try adoptMadeWhileDown(afterLosing: gone)
        }
        // Files with saved positions first: a new file that is a copy of one is known as such.
        let (resumed, new) = (appeared.filter { candidates[$0.status.identity] != nil }, appeared.filter { candidates[$0.status.identity] == nil })
        for found in resumed + new where files[found.status.identity] == nil {
            // (A copy may have been taken up already, for the file it copies.)
            try startFollowing(found, saved: candidates[found.status.identity] ?? [])
        }
    }

    // MARK: Starting

    /// Starts following a file the walk found: where its saved position says (`candidates`: the
    /// saved positions of its inode), else at the start the rules give; opens it (for its fingerprint and a watch), and keeps it open if a
    /// descriptor is free.
    private mutating func startFollowing(_ found: TailScan.Found, saved candidates: [SourcePosition]) throws {
        guard let file = open(found.path, expecting: found.status.identity) else {
            // Renamed between the walk and now (a rotation in this very moment): what it had
            // not sent is read where it went, before a new file at its name.
            try adoptRotated(candidates)
            return
        }
        let identity = file.identity
        let size = try file.status().size
        var tailed = TailedFile(identity: identity, path: found.path, file: file, offset: 0, now: clock.now)
        tailed.mayBeACopy = true
        var truncatedWhileDown: SourcePosition?
        if !candidates.isEmpty {
            let (match, stale) = try SavedPositions.pick(candidates) { try reader.file(file, matches: $0) }
            for old in stale where old.goneSince == nil { tailer.report(.stopped(old.source)) }
            if let match {
                tailed.mayBeACopy = false
                tailed.fingerprint = match.source.fingerprint
                tailed.offset = size >= match.offset ? max(match.offset, 0) : 0
            } else {
                // Its inode with other first bytes: truncated while nobody followed it, or the
                // followed file was deleted and its inode number taken again.
                truncatedWhileDown = stale.last { $0.source.fingerprint != 0 && $0.goneSince == nil }
                if truncatedWhileDown != nil, let savedAt = saved.savedAt, drained(at: found.path).isEmpty {
                    // What was rotated away since the save (not a copy of the saved file, whose
                    // unsent tail is read below) came before this file.
                    try readMadeWhileDown(at: found.path, since: savedAt, after: nil, copiesOf: stale.map(\.source.fingerprint))
                }
            }
        } else if isFirstScan && saved.isFirstRun && options.startAt == .end {
            tailed.offset = try startOfLastLine(file, size: size)
            tailed.mayBeACopy = false
        }
        tailed.scanned = tailed.offset
        if tailed.fingerprint == 0 { tailed.fingerprint = try reader.fingerprint(of: file) }
        let isCopy = try recogniseCopy(&tailed)
        // It waits for the last of the files that were at its name (each waits for the one before).
        let former = drained(at: found.path)
        if let predecessor = former.first(where: { last in !former.contains { $0.heldBy == last.identity } }) {
            tailed.heldBy = predecessor.identity
        }
        if let refused = watcher.watchFile(identity, descriptor: file.descriptor) { sayUnwatched(found.path, errno: refused) }
        notices.skipped.remove(found.path)
        switch scheduler.requestSlot(for: identity, mayClose: closable) {
        case .open: break
        case .openAfterClosing(let victim): files[victim]?.file = nil
        case .wait: tailed.file = nil
        }
        files[identity] = tailed
        guard !isCopy else { return }
        tailer.publish(tailed)
        tailer.report(.following(tailed.position))
        tailer.say(.following(path: found.path, offset: tailed.offset))
        scheduler.markReady(identity)
        if let former = truncatedWhileDown {
            // What it had not sent is in its copy, as for a truncation seen while following.
            try readTailFromCopy(of: &tailed, sentUpTo: former.offset, fingerprint: former.source.fingerprint)
            files[identity] = tailed
        }
    }

    /// The files that were at `path` and are read to their end before a new file there.
    private func drained(at path: String) -> [TailedFile] {
        files.values.filter { $0.hasVanished && $0.path == path }
    }

    /// At start, where a file with a partial last line ends its last whole line: starting
    /// there rather than mid-line sends that line whole once its newline comes. Looks back at
    /// most one chunk; a longer partial line starts at the end.
    private func startOfLastLine(_ file: ReadOnlyFile, size: Int64) throws -> Int64 {
        guard size > 0 else { return 0 }
        var probe = [UInt8](repeating: 0, count: Int(min(Int64(options.readChunk), size)))
        let from = size - Int64(probe.count)
        let count = try probe.withUnsafeMutableBytes { try file.read(into: $0, at: from) }
        guard count > 0 else { return size }
        guard let last = probe.withUnsafeBytes({ ReplayBuffer.lastNewline(in: UnsafeRawBufferPointer(rebasing: $0[..<count])) }) else {
            return Int64(probe.count) == size ? 0 : size
        }
        return from + Int64(last + 1)
    }

    /// Saved files that no pattern found: rotated while nobody followed (found beside their
    /// saved path by ``RotatedFileLookup``) they are drained first; the others are reported
    /// gone. Returns the paths whose followed file is gone.
    private mutating func adoptRotatedWhileDown() throws -> Set<String> {
        try adoptRotated(saved.takeRemaining())
    }

    /// Files made and rotated away while nobody followed them: the state never knew them. Beside
    /// the files drained from their rotated names, the rotated names of their path last written
    /// when the newest of them was or later came after them; at a path in `gone` (its followed
    /// file deleted while down, its rotation's oldest), the rotated names last written since the
    /// state was saved. Those not followed and selected by no pattern (the walk starts those as
    /// files of their own) are read from their start, oldest first, each after the one before
    /// it, and before a new file at the name.
    private mutating func adoptMadeWhileDown(afterLosing gone: Set<String>) throws {
        let drained = files.values.filter(\.hasVanished)
        var since: [String: (after: FileIdentity?, lastWrite: timespec)] = [:]
        for path in Set(drained.map(\.path)) {
            let written = drained.filter { $0.path == path }.compactMap { file in
                file.file.flatMap(RotatedFileLookup.lastWrite).map { (after: Optional(file.identity), lastWrite: $0) }
            }
            since[path] = written.max { RotatedFileLookup.isEarlier($0.lastWrite, than: $1.lastWrite) }
        }
        if let savedAt = saved.savedAt {
            for path in gone where since[path] == nil { since[path] = (nil, savedAt) }
        }
        for (path, start) in since { try readMadeWhileDown(at: path, since: start.lastWrite, after: start.after) }
    }

    /// Reads the rotated names of `path` last written at `since` or later (not followed, not
    /// selected by a pattern, not compressed, and not a copy of a file whose fingerprint is in
    /// `copiesOf`: such a copy is read from its saved offset instead) from their start, oldest
    /// first, the first after `after`, each after the one before.
    private mutating func readMadeWhileDown(at path: String, since: timespec, after: FileIdentity?, copiesOf: [UInt64] = []) throws {
        var last = after
        let made = RotatedFileLookup.rotatedFiles(of: path, writtenSince: since).filter {
            files[$0.identity] == nil && !tailer.selection.selects($0.path)
        }
        for made in made {
            guard let file = open(made.path, expecting: made.identity) else { continue }
            if try copiesOf.contains(where: { try $0 != 0 && reader.file(file, matches: $0) }) { continue }
            var tailed = TailedFile(identity: made.identity, path: path, file: file, offset: 0, now: clock.now)
            tailed.fingerprint = try reader.fingerprint(of: file)
            tailed.vanishedAt = clock.now
            tailed.heldBy = last
            watcher.watchFile(made.identity, descriptor: file.descriptor)
            scheduler.forceOpen(made.identity)
            vanished.insert(made.identity)
            files[made.identity] = tailed
            tailer.publish(tailed)
            tailer.report(.following(tailed.position))
            tailer.say(.following(path: made.path, offset: 0))
            last = made.identity
        }
    }

    /// Follows each of `positions` (saved, of files not at their saved path) where it went
    /// beside that path, from its offset, as a file that vanished; reports the others gone, and
    /// returns the paths of those that were followed when the positions were saved.
    @discardableResult
    private mutating func adoptRotated(_ positions: [SourcePosition]) throws -> Set<String> {
        var gone: Set<String> = []
        for position in positions.reversed() {
            let identity = FileIdentity(device: position.source.device, inode: position.source.inode)
            guard files[identity] == nil, !position.path.isEmpty,
                let rotatedPath = RotatedFileLookup.path(of: identity, near: position.path),
                let file = open(rotatedPath, expecting: identity),
                try reader.file(file, matches: position.source.fingerprint)
            else {
                if position.goneSince == nil {
                    tailer.report(.stopped(position.source))
                    if !position.path.isEmpty { gone.insert(position.path) }
                }
                continue
            }
            let size = try file.status().size
            var tailed = TailedFile(identity: identity, path: position.path, file: file, offset: size >= position.offset ? position.offset : 0, now: clock.now)
            tailed.fingerprint = position.source.fingerprint
            tailed.vanishedAt = clock.now
            watcher.watchFile(identity, descriptor: file.descriptor)
            scheduler.forceOpen(identity)
            vanished.insert(identity)
            files[identity] = tailed
            tailer.publish(tailed)
            tailer.say(.following(path: rotatedPath, offset: tailed.offset))
            scheduler.markReady(identity)
        }
        return gone
    }

    // MARK: Vanishing and dropping

    /// A file no pattern matches any more: it is read on (to its end, and while it grows)
    /// before it is dropped. One that is closed is looked for beside its last path; if it is
    /// not there, what it had unread is lost.
    private mutating func vanish(_ identity: FileIdentity) throws {
        guard var tailed = files[identity] else { return }
        tailed.vanishedAt = clock.now
        tailed.atEnd = false
        if tailed.file == nil {
            if let rotatedPath = RotatedFileLookup.path(of: identity, near: tailed.path), let file = open(rotatedPath, expecting: identity) {
                tailed.file = file
            } else {
                files[identity] = tailed
                try drop(identity, nil)
                return
            }
        }
        scheduler.forceOpen(identity)
        vanished.insert(identity)
        files[identity] = tailed
        scheduler.markReady(identity)
    }

    /// Drops vanished files that are done: read to their end, and either a new file at their
    /// name has data (it is read next) or they have not grown for `rotateWait`.
    mutating func finishVanished(_ writer: any LineSink) throws {
        let now = clock.now
        for identity in vanished {
            guard var tailed = files[identity], let since = tailed.vanishedAt else { continue }
            if !tailed.finishing, let successor = (try? FileStatus.of(path: tailed.path, throwing: StreamUpError.self)) ?? nil,
                successor.identity != identity, successor.size > 0
            {
                // The program writes to the new file now: whatever reached this one came first.
                tailed.finishing = true
                tailed.atEnd = false
                files[identity] = tailed
                scheduler.markReady(identity)
                continue
            }
            guard tailed.atEnd, !scheduler.isReady(identity) else { continue }
            if tailed.finishing || now - max(since, tailed.lastGrowth) >= options.rotateWait {
                try drop(identity, writer)
            }
        }
    }

    /// Stops following `identity`: its unterminated last line goes out (with `writer`), it is
    /// closed and reported gone, and a file waiting at its name is read next.
    private mutating func drop(_ identity: FileIdentity, _ writer: (any LineSink)?) throws {
        guard var tailed = files.removeValue(forKey: identity) else { return }
        // (A copy still held has nothing of its own to send.)
        if let writer, tailed.file != nil, tailed.copyOf == nil {
            let sent = try reader.finish(&tailed, into: writer)
            if sent > 0 { tailer.say(.unterminatedLine(path: tailed.path, bytes: Int(sent))) }
        }
        tailed.file = nil
        vanished.remove(identity)
        waitingForSlot.remove(identity)
        copyTails.remove(identity)
        watcher.unwatchFile(identity)
        scheduler.remove(identity)
        tailer.unpublish(tailed)
        tailer.report(.stopped(tailed.sourceID))
        tailer.say(.finished(path: tailed.path))
        releaseHeld(by: identity)
        // Its copies' bytes were sent from it, up to where it was read.
        for (copy, held) in files where held.copyOf == identity { try releaseCopy(copy, at: tailed.offset) }
        for waiting in waitingForSlot { scheduler.markReady(waiting) }
        waitingForSlot.removeAll()
    }

    // MARK: Descriptors

    /// Makes sure `tailed` is open, closing the least recently written idle file if every
    /// descriptor is taken; false when it has to wait.
    mutating func acquireDescriptor(_ tailed: inout TailedFile) throws -> Bool {
        if tailed.file != nil { return true }
        switch scheduler.requestSlot(for: tailed.identity, mayClose: closable) {
        case .open: break
        case .openAfterClosing(let victim): files[victim]?.file = nil
        case .wait: return false
        }
        let identity = tailed.identity
        if let file = open(tailed.path, expecting: identity)
            ?? RotatedFileLookup.path(of: identity, near: tailed.path).flatMap({ open($0, expecting: identity) })
        {
            tailed.file = file
            return true
        }
        // Not where it was: the next walk says what became of it.
        scheduler.closed(identity)
        rescanNeeded = true
        return false
    }

    /// Which open files may be closed for another: not the vanished ones (they could not be
    /// found again by name).
    private var closable: (FileIdentity) -> Bool {
        let pinned = vanished
        return { !pinned.contains($0) }
    }

    /// Opens `path` if it is still the file `identity`; says why not (once per path) when it
    /// cannot be read.
    private mutating func open(_ path: String, expecting identity: FileIdentity) -> ReadOnlyFile? {
        do {
            guard let file = try ReadOnlyFile.open(path), file.identity == identity else {
                rescanNeeded = true
                return nil
            }
            return file
        } catch {
            let errno = error.errno ?? 0
            if errno == EMFILE || errno == ENFILE {
                if !notices.outOfDescriptors { tailer.say(.outOfDescriptors(path: path, reason: SourceEvent.words(errno: errno))) }
                notices.outOfDescriptors = true
            } else if notices.skipped.insert(path).inserted {
                let reason = error.code == .invalidConfiguration ? "not a regular file" : SourceEvent.words(errno: errno)
                tailer.say(.skipped(path: path, reason: reason))
            }
            return nil
        }
    }

    private mutating func sayUnwatched(_ path: String, errno: Int32) {
        guard !notices.unwatched else { return }
        notices.unwatched = true
        // Only a full watch table is the limit's doing; a directory this user may not read is not.
        let reason =
            errno == ENOSPC
            ? "the inotify watch limit is reached (raise fs.inotify.max_user_watches)"
            : errno == EMFILE
                ? "the inotify instance limit is reached (raise fs.inotify.max_user_instances)" : SourceEvent.words(errno: errno)
        tailer.say(.unwatched(path: path, reason: reason))
    }
}
