import StreamUp
import StreamUpSystem

/// copytruncate: logrotate copies a followed file (`app.log` to `app.log.1`), then truncates it
/// in place. The copy is not read from its start (its bytes are the file's, sent from it), and
/// what the file had not sent when it was truncated is read from the copy before the file goes
/// on from its start:
///
///     app.log    | sent ................ offset | not read yet |  ← copied, then truncated
///     app.log.1  | the same bytes ...... offset | read from here |
///
/// A copy is a file whose first bytes are a followed file's (its fingerprint) and, while that
/// file goes on, whose last bytes are that file's at the same offsets (a file that merely
/// starts alike has bytes of its own further on, and is read as itself).
extension TailLoop {
    // MARK: Recognising a copy

    /// For a file found new that just got its fingerprint: makes it a copy of the followed
    /// file it copies, if any (it is then held, and not reported: nothing of it is sent while
    /// that file goes on). Returns whether it is a copy.
    mutating func recogniseCopy(_ tailed: inout TailedFile) throws -> Bool {
        guard tailed.mayBeACopy, tailed.fingerprint != 0, let file = tailed.file else { return false }
        tailed.mayBeACopy = false
        // One read of its first bytes, checked against every followed file's fingerprint.
        let head = try FileFingerprint.head(of: file)
        for (identity, original) in files where identity != tailed.identity && original.fingerprint != 0 && original.copyOf == nil {
            guard FileFingerprint.matches(original.fingerprint, head: head), try isCopy(file, of: original) else { continue }
            tailed.copyOf = identity
            tailer.say(.copy(path: tailed.path, of: original.path))
            // If it was truncated, its next turn says so and takes the tail from this copy.
            scheduler.markReady(identity)
            return true
        }
        return false
    }

    /// A held copy's turn: it stays held while it is still a copy; one that has bytes of its
    /// own is a file of its own after all, read from its start.
    mutating func checkCopy(_ tailed: inout TailedFile) throws {
        guard let identity = tailed.copyOf, let file = tailed.file else { return }
        tailed.atEnd = true
        if let original = files[identity], try isCopy(file, of: original) { return }
        tailed.copyOf = nil
        tailed.atEnd = false
        tailer.publish(tailed)
        tailer.report(.following(tailed.position))
        scheduler.markReady(tailed.identity)
    }

    /// Whether `copy` (whose first bytes are `original`'s) holds only `original`'s bytes: its
    /// last bytes are `original`'s at the same offsets; or `original` is shorter than what was
    /// read of it (truncated: its next turn takes its tail from the copy).
    private func isCopy(_ copy: ReadOnlyFile, of original: TailedFile) throws -> Bool {
        let reopened = original.file == nil ? (try? ReadOnlyFile.open(original.path)) ?? nil : nil
        guard let file = original.file ?? reopened, file.identity == original.identity else { return false }
        let size = try copy.status().size
        let originalSize = try file.status().size
        if originalSize < original.offset { return true }
        return try originalSize >= size && reader.file(copy, endsLike: file, size: size)
    }

    // MARK: Reading what the truncated file had not sent

    /// `tailed` was truncated when it had sent its bytes up to `offset` (under `fingerprint`):
    /// its copy, found among its held copies and the files named like its rotated copies
    /// (`RotatedFileLookup`), is read from `offset` to its end before `tailed` is read again
    /// (``TailedFile/heldBy``). Its other copies are done: their bytes were sent from it, or are
    /// in the copy read.
    mutating func readTailFromCopy(of tailed: inout TailedFile, sentUpTo offset: Int64, fingerprint: UInt64) throws {
        guard fingerprint != 0 else { return }
        let held = files.values.filter { $0.copyOf == tailed.identity }
        var chosen: (path: String, file: ReadOnlyFile)?
        // The largest held copy is the latest (an earlier copy of a growing file is shorter).
        var largest: Int64 = -1
        for copy in held {
            guard let file = copy.file ?? (try? ReadOnlyFile.open(copy.path)) ?? nil, file.identity == copy.identity else { continue }
            let size = try file.status().size
            if size > largest { (chosen, largest) = ((copy.path, file), size) }
        }
        if chosen == nil {
            for path in RotatedFileLookup.rotatedNames(of: tailed.path) where chosen == nil {
                guard let file = (try? ReadOnlyFile.open(path)) ?? nil, file.identity != tailed.identity else { continue }
                // A file already followed was read as itself, unless it is new and unread.
                if let known = files[file.identity], !(known.mayBeACopy && known.fingerprint == 0) { continue }
                if try reader.file(file, matches: fingerprint) { chosen = (path, file) }
            }
        }
        for copy in held where copy.identity != chosen?.file.identity {
            try releaseCopy(copy.identity, at: .max)
        }
        guard let (path, file) = chosen else { return }
        let start = min(offset, try file.status().size)
        let followed = files[file.identity]
        var copy = followed ?? TailedFile(identity: file.identity, path: path, file: nil, offset: start, now: clock.now)
        copy.fingerprint = try reader.fingerprint(of: file)
        if copy.file == nil {
            copy.file = file
            watcher.watchFile(file.identity, descriptor: file.descriptor)
        }
        if let followed, followed.copyOf == nil, followed.fingerprint != copy.fingerprint {
            // Followed while empty, under no fingerprint (a held copy was never reported).
            tailer.report(.stopped(followed.sourceID))
        } else if followed == nil && !tailer.selection.selects(path) {
            // Not followed for itself: read to its end, then dropped.
            copy.vanishedAt = clock.now
            copy.finishing = true
            vanished.insert(file.identity)
        }
        copy.copyOf = nil
        copy.mayBeACopy = false
        copy.offset = start
        copy.scanned = start
        copy.pending = 0
        copy.atEnd = false
        scheduler.forceOpen(file.identity)
        files[file.identity] = copy
        tailer.publish(copy)
        tailer.report(.following(copy.position))
        tailer.say(.readingCopy(path: tailed.path, copy: path, offset: start))
        scheduler.markReady(file.identity)
        copyTails.insert(file.identity)
        tailed.heldBy = file.identity
    }

    /// The held copy `identity` is done being a copy: what of it was sent from its original (up
    /// to `sent`, at most its size) counts as sent; it is followed as a file of its own from
    /// there.
    mutating func releaseCopy(_ identity: FileIdentity, at sent: Int64) throws {
        guard var copy = files[identity], copy.copyOf != nil else { return }
        let size = try copy.file.map { try $0.status().size } ?? ((try? FileStatus.of(path: copy.path, throwing: StreamUpError.self)) ?? nil)?.size ?? 0
        copy.copyOf = nil
        copy.offset = min(sent, size)
        copy.scanned = copy.offset
        copy.pending = 0
        copy.atEnd = false
        files[identity] = copy
        tailer.publish(copy)
        tailer.report(.following(copy.position))
        scheduler.markReady(identity)
    }

    /// Lets the files held by `holder` be read (it was drained, or its copy's tail was read).
    mutating func releaseHeld(by holder: FileIdentity) {
        for (waiting, held) in files where held.heldBy == holder {
            files[waiting]?.heldBy = nil
            scheduler.markReady(waiting)
        }
    }
}
