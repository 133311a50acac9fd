import Foundation
import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A replay buffer's bytes on disk, so that what the server has not acknowledged survives a
/// crash or a restart of streamup, and a long outage does not have to fit in memory.
///
/// A spool directory holds:
/// - `OFFSET.spool` files (the 20-digit stream offset of their first byte), each at most
///   ``fileBytes`` long, written in order; a file is deleted once every byte in it is
///   acknowledged (and, with a state file, covered by the saved source positions);
/// - beside each, `OFFSET.index`: one ``SpoolIndexEntry`` per run of bytes written, with its
///   CRC-32 and the source bytes it came from;
/// - `marks`: the acknowledged offset and the newest file, overwritten in place
///   (``SpoolMarks``); `stream.json`: the stream's id and the resumable upload in use;
/// - `lock`: held with `flock` while a process uses the spool, so two cannot share it.
///
/// On open (SpoolStorage+Opening), every pending byte is checked against the index: a missing
/// or shortened file, a changed byte, an acknowledged offset past the end are all refused with
/// a message, never sent. Bytes are written with `pwrite` and not `fsync`ed one by one: they
/// survive the process being killed (they are in the kernel), not a power cut.
///
/// Thread safety: `files` is guarded by a `Mutex`; system calls run outside it. The writer
/// (one thread) appends to the newest file only; readers read unacknowledged bytes, which are
/// never deleted; `acknowledge` deletes files wholly below the acknowledged offset and never
/// the newest, one caller at a time (`acknowledging`, held across its deletes and the marks
/// write so that two acknowledgers reach the disk in order; nothing else takes it).
final class SpoolStorage: ReplayStorage, @unchecked Sendable {
    /// One `OFFSET.spool` file and its index.
    struct File {
        let start: Int
        var size: Int
        var data: CInt
        var index: CInt
        /// Entries in the index file, and the last one (it may still grow).
        var entryCount: Int
        var lastEntry: SpoolIndexEntry?
        var end: Int { start + size }
    }

    /// What `stream.json` holds.
    struct StreamRecord: Codable, Equatable {
        var version = 2
        var streamID: String
        /// The resumable upload the stream is being appended to, if any.
        var upload: ResumableUploadReference?
        /// Bytes set aside as dead letters so far (the receiver's offsets leave them out).
        var skipped: Int?
        /// Where the input ended, if it did: a last record without `\n` there is whole.
        var inputEnd: Int?
        /// The stream range of the first segment cut and not yet acknowledged, `[start, end]`:
        /// sent again after a restart, it is cut the same, so that the resend is identical to
        /// what the receiver may hold.
        var cut: [Int]?
        /// The segments after it that were out too (several requests in flight), each
        /// `[start, end]`, in stream order.
        var moreCuts: [[Int]]?
    }

    /// What an earlier run left.
    struct Recovered {
        var acknowledged: Int
        var end: Int
        var streamID: String
        var upload: ResumableUploadReference?
        var skipped: Int
        /// Where an earlier run's input ended, if it did.
        var inputEnd: Int?
        /// The segments cut and not acknowledged, in stream order, as far as they lie in the
        /// pending bytes and follow each other from the first.
        var cuts: [Range<Int>]
        /// Where the bytes the spool held when opened came from (acknowledged ones too, back to
        /// where files were released; also when nothing was pending and a new stream starts),
        /// in stream order, for the saved positions.
        var sources: [SourceIndex.Entry]
        /// What opening found amiss and did about it (bytes past the index kept or left out),
        /// one line each for stderr.
        var notes: [String] = []
    }

    let directory: String
    let capacity: Int
    var isDurable: Bool { true }
    /// Largest size of one spool file.
    let fileBytes: Int
    let recovered: Recovered
    let files: Mutex<[File]>
    /// The `lock` and `marks` descriptors, and those replaced when the files were written into
    /// a directory that came back (readers may still use them: closed with the storage).
    struct Descriptors {
        var lock: CInt
        var marks: CInt
        var retired: [CInt] = []
    }
    let descriptors: Mutex<Descriptors>
    /// Whether the directory is gone, which one is expected, and who hears about it.
    struct DirectoryState {
        var identity: DirectoryIdentity?
        var isGone = false
        var notice: (@Sendable (String) -> Void)?
    }
    let directoryState: Mutex<DirectoryState>
    let streamRecord: Mutex<StreamRecord>
    /// Held while `stream.json` is written, so that writers taking turns each write the newest
    /// record: a copy taken before another change can never be written after it.
    let recordWrites = Mutex(())
    /// Where the producer's bytes wait between `writableSpace` and `commit` (and, while the
    /// disk is full, until a commit works: the buffer holds them, its log's held write, ``ReplayLog/Write/held(_:)``).
    private let staging: UnsafeMutableRawBufferPointer
    /// Whether the disk has room as the writes find it, and whether `stream.json` waits to be
    /// written because it had none; guarded by its own lock (nothing is called under it).
    struct Room {
        var room = StorageRoom()
        var recordUnsaved = false
    }
    let room = Mutex(Room())
    /// What the backoff of a full disk is measured on (the uploader's clock).
    let roomClock = Mutex(UploadClock.continuous)

    init(directory: String, capacity: Int, fileBytes: Int, files: [File], lock: CInt, marks: CInt, record: StreamRecord, recovered: Recovered) {
        self.acknowledgedMark = Mutex(recovered.acknowledged)
        self.directory = directory
        self.capacity = capacity
        self.fileBytes = fileBytes
        self.files = Mutex(files)
        self.descriptors = Mutex(Descriptors(lock: lock, marks: marks))
        self.directoryState = Mutex(DirectoryState(identity: Self.identity(of: directory)))
        self.streamRecord = Mutex(record)
        self.recovered = recovered
        self.staging = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
    }

    deinit {
        for file in files.withLock({ $0 }) {
            SystemCall.close(file.data)
            SystemCall.close(file.index)
        }
        let descriptors = descriptors.withLock { $0 }
        for descriptor in descriptors.retired + [descriptors.marks, descriptors.lock] where descriptor >= 0 { SystemCall.close(descriptor) }
        staging.deallocate()
    }

    /// Lets another process (or another pipeline of this one) take the spool: the upload that
    /// used it has ended. The files stay open until the storage goes, for any late reader; the
    /// spool is the next owner's from now on, so nothing more is written to it.
    func releaseLock() {
        let lock = descriptors.withLock { descriptors -> CInt in
            defer { descriptors.lock = -1 }
            return descriptors.lock
        }
        if lock >= 0 { SystemCall.close(lock) }
    }

    /// The capacity used when none is given: 1 GiB, or half of what the file system holding
    /// `directory` has free, whichever is smaller, so a spool cannot fill its file system by
    /// itself (its files hold a little more: each goes once all its bytes are acknowledged).
    static func defaultCapacity(for directory: String) -> Int {
        var status = statvfs()
        var path = directory
        while statvfs(path, &status) != 0 {
            let parent = (path as NSString).deletingLastPathComponent
            if parent == path || parent.isEmpty { return 1 << 30 }
            path = parent
        }
        let free = Int(status.f_bavail) * Int(status.f_frsize)
        return min(1 << 30, free / 2)
    }

    /// Who hears that the directory was deleted or is back, or its disk is full or has room
    /// again (one line each); `clock`: what the wait for room on a full disk is measured on.
    func setNotice(_ notice: @escaping @Sendable (String) -> Void, clock: UploadClock = .continuous) {
        directoryState.withLock { $0.notice = notice }
        roomClock.withLock { $0 = clock }
    }

    /// Remembers the resumable upload the stream is appended to (nil: none), for the next start.
    func saveUpload(_ upload: ResumableUploadReference?) throws(StreamUpError) {
        let changed = streamRecord.withLock { record -> Bool in
            guard record.upload != upload else { return false }
            record.upload = upload
            return true
        }
        // A deleted directory gets the record when it is back.
        if changed, !isDirectoryGone { try saveRecord() }
    }

    func inputEnded(at offset: Int) {
        streamRecord.withLock { $0.inputEnd = offset }
        // At worst the next start drops a last record without `\n` it cannot tell from a torn one.
        if !isDirectoryGone { try? saveRecord() }
    }

    /// Remembers the ranges of the segments out (the one about to be sent among them), in
    /// stream order, for the next start.
    func saveCuts(_ ranges: [Range<Int>]) throws(StreamUpError) {
        let changed = streamRecord.withLock { record -> Bool in
            let cuts = ranges.map { [$0.lowerBound, $0.upperBound] }
            let more = cuts.count > 1 ? Array(cuts.dropFirst()) : nil
            guard record.cut != cuts.first || record.moreCuts != more else { return false }
            record.cut = cuts.first
            record.moreCuts = more
            return true
        }
        // A deleted directory gets the record when it is back.
        if changed, !isDirectoryGone { try saveRecord() }
    }

    /// Writes the newest stream record to `stream.json`, one writer at a time (the file's own
    /// lock: nothing else waits on it). On a full disk the record waits in memory (the full
    /// disk is said once) and is written with the next write that works.
    func saveRecord() throws(StreamUpError) {
        do throws(StreamUpError) {
            try writeRecord()
        } catch {
            guard error.isOutOfRoom else { throw error }
            _ = retryTime(after: error)
            return
        }
        wrote()
    }

    /// Writes `stream.json` now; one that found no room waits to be written again
    /// (`Room.recordUnsaved`), and no spool data is written before it is.
    private func writeRecord() throws(StreamUpError) {
        do throws(StreamUpError) {
            try recordWrites.withLock { _ throws(StreamUpError) in
                try Self.save(streamRecord.withLock { $0 }, in: directory)
            }
        } catch {
            if error.isOutOfRoom { room.withLock { $0.recordUnsaved = true } }
            throw error
        }
        room.withLock { $0.recordUnsaved = false }
    }

    /// Remembers how many bytes were set aside as dead letters, for the next start.
    func saveSkipped(_ skipped: Int) throws(StreamUpError) {
        streamRecord.withLock { $0.skipped = skipped }
        if !isDirectoryGone { try saveRecord() }
    }

    // MARK: ReplayStorage

    func writableSpace(at offset: Int, maxLength: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: staging[..<min(maxLength, staging.count)])
    }

    /// A write that fails is undone, so the spool holds exactly what the buffer counts as
    /// written: the count a stop gives is what the next start sends. On a full file system
    /// (``retryTime(after:)``) the buffer keeps the bytes and commits them again later.
    func commit(_ space: UnsafeMutableRawBufferPointer, count: Int, at offset: Int, mark: SourceMark?) throws(StreamUpError) {
        checkDirectory()
        do {
            // A record that waits for room goes first: while it cannot be written, neither
            // are new bytes (the input waits, as the full disk's line says).
            if room.withLock({ $0.recordUnsaved }), !isDirectoryGone { try writeRecord() }
            try append(space, count: count, at: offset, mark: mark)
            wrote()
        } catch {
            undoWrites(from: offset)
            if error.isOutOfRoom { throw error }
            // The bytes of this write were read from the input but are in no storage now.
            let lost = "\(count) byte\(count == 1 ? "" : "s") read from the input \(count == 1 ? "was" : "were") not kept"
            throw StreamUpError(error.code, "\(error.description); \(lost)")
        }
    }

    /// Cuts off what a failed ``commit(_:count:at:mark:)`` left: bytes written to the newest
    /// file but not recorded, and whatever it recorded past `offset`. Cutting frees space, so
    /// it works on a full file system.
    func discard(from offset: Int) {
        undoWrites(from: offset)
    }

    /// A write found no room (ENOSPC, EDQUOT): says so when the disk just filled, and when to
    /// try again (``StorageRoom``); nil for any other error.
    func retryTime(after error: StreamUpError) -> UploadClock.Instant? {
        guard error.isOutOfRoom else { return nil }
        let now = roomClock.withLock { $0 }.now
        let (retryAt, began) = room.withLock { $0.room.writeFailed(now: now) }
        if began {
            say(
                "spool \(directory) is full (\(error)): waiting, and reading no more input meanwhile; "
                    + "room comes back as the server acknowledges what the spool holds (its files go), or when space is freed on its disk")
        }
        return retryAt
    }

    /// A write worked (`stream.json` waiting for room was written before it): when the disk
    /// had been full, says that writing works again.
    private func wrote() {
        guard room.withLock({ $0.room.isFull }) else { return }
        let now = roomClock.withLock { $0 }.now
        if let full = room.withLock({ $0.room.wrote(now: now) }) {
            say("spool \(directory) has room again: writing again after \(StreamUploader.spoken(full)) full; nothing read was lost")
        }
    }

    private func undoWrites(from offset: Int) {
        if let newest = files.withLock({ $0.last }) {
            _ = ftruncate(newest.data, off_t(newest.size))
            _ = ftruncate(newest.index, off_t(newest.entryCount * SpoolIndexEntry.size))
        }
        try? cut(to: offset)
    }

    private func append(_ space: UnsafeMutableRawBufferPointer, count: Int, at offset: Int, mark: SourceMark?) throws(StreamUpError) {
        var done = 0
        while done < count {
            let file = try newestFile(writingAt: offset + done)
            let piece = min(count - done, fileBytes - file.size)
            let bytes = UnsafeRawBufferPointer(rebasing: space[done..<done + piece])
            var written = 0
            while written < piece {
                written += try SystemCall.runBlocking("spool write to \(Self.path(of: file.start, in: directory, suffix: "spool")) failed") {
                    pwrite(file.data, bytes.baseAddress! + written, piece - written, off_t(file.size + written))
                }
            }
            let pieceMark = mark.map { StreamWriter.mark($0, forBytes: done, of: count) }
            try record(bytes, at: offset + done, mark: pieceMark, in: file)
            done += piece
        }
    }

    /// The file bytes at `offset` go to: the newest, or a new one when that is full.
    private func newestFile(writingAt offset: Int) throws(StreamUpError) -> File {
        if let newest = files.withLock({ $0.last }), newest.end == offset, newest.size < fileBytes { return newest }
        if isDirectoryGone {
            let data = try Self.memoryFile()
            let index: CInt
            do {
                index = try Self.memoryFile()
            } catch {
                SystemCall.close(data)
                throw error
            }
            let file = File(start: offset, size: 0, data: data, index: index, entryCount: 0, lastEntry: nil)
            files.withLock { $0.append(file) }
            try writeMarks(SpoolMarks(acknowledged: recordedAcknowledged, newest: offset))
            return file
        }
        let data = try Self.create(Self.path(of: offset, in: directory, suffix: "spool"))
        let index: CInt
        do {
            index = try Self.create(Self.path(of: offset, in: directory, suffix: "index"))
        } catch {
            SystemCall.close(data)
            unlink(Self.path(of: offset, in: directory, suffix: "spool"))
            throw error
        }
        let file = File(start: offset, size: 0, data: data, index: index, entryCount: 0, lastEntry: nil)
        files.withLock { $0.append(file) }
        try writeMarks(SpoolMarks(acknowledged: recordedAcknowledged, newest: offset))
        return file
    }

    /// Adds `bytes` (written at `offset` of `file`) to the file's index: the last entry grows,
    /// or a new entry follows it.
    private func record(_ bytes: UnsafeRawBufferPointer, at offset: Int, mark: SourceMark?, in file: File) throws(StreamUpError) {
        let entry: SpoolIndexEntry
        let slot: Int
        if let last = file.lastEntry, last.streamEnd == offset, last.canExtend(with: mark, count: bytes.count) {
            entry = last.extended(by: bytes.count, mark: mark, dataCRC: Checksum.crc32(bytes, continuing: last.dataCRC))
            slot = file.entryCount - 1
        } else {
            entry = SpoolIndexEntry(streamStart: offset, length: bytes.count, dataCRC: Checksum.crc32(bytes), mark: mark)
            slot = file.entryCount
        }
        try SystemCall.writeAll(
            file.index, entry.encoded, at: slot * SpoolIndexEntry.size,
            "spool index write to \(Self.path(of: file.start, in: directory, suffix: "index")) failed")
        files.withLock { files in
            guard let index = files.lastIndex(where: { $0.start == file.start }) else { return }
            files[index].size += bytes.count
            files[index].lastEntry = entry
            files[index].entryCount = slot + 1
        }
    }

    func read(at offset: Int, into destination: UnsafeMutableRawBufferPointer) throws(StreamUpError) -> Int {
        guard let file = files.withLock({ files in files.last { $0.start <= offset && offset < $0.end } }) else {
            throw StreamUpError(.io, "spool \(directory) has no byte at offset \(offset)")
        }
        let count = min(destination.count, file.end - offset)
        let read = try SystemCall.runBlocking("spool read from \(Self.path(of: file.start, in: directory, suffix: "spool")) failed") {
            pread(file.data, destination.baseAddress!, count, off_t(offset - file.start))
        }
        guard read > 0 else {
            throw StreamUpError(
                .io, "spool file \(Self.path(of: file.start, in: directory, suffix: "spool")) is shorter than expected; move the spool away to start afresh")
        }
        return read
    }

    func acknowledge(upTo offset: Int, releasingBelow releasable: Int, written: Int) throws(StreamUpError) {
        try acknowledging.withLock { told throws(StreamUpError) in
            // The acknowledged offset on disk never goes back, though two calls may pass.
            told = max(told, offset)
            try acknowledge(upTo: told, releasingBelow: min(releasable, told))
        }
    }

    /// Orders acknowledgements: the highest acknowledged offset told.
    private let acknowledging = Mutex(0)

    private func acknowledge(upTo offset: Int, releasingBelow releasable: Int) throws(StreamUpError) {
        let gone = files.withLock { files -> [File] in
            var gone: [File] = []
            while files.count > 1, let first = files.first, first.end <= releasable {
                gone.append(files.removeFirst())
            }
            return gone
        }
        remove(gone)
        if offset != recordedAcknowledged {
            try writeMarks(SpoolMarks(acknowledged: offset, newest: files.withLock { $0.last?.start }))
        }
    }

    /// Closes and deletes the data and index files of `gone` (taken out of `files` already).
    private func remove(_ gone: [File]) {
        for file in gone {
            SystemCall.close(file.data)
            SystemCall.close(file.index)
            unlink(Self.path(of: file.start, in: directory, suffix: "spool"))
            unlink(Self.path(of: file.start, in: directory, suffix: "index"))
        }
    }

    /// After a run that delivered everything (its input ended, every byte acknowledged): the
    /// spool's files go, so an idle spool takes no space. The marks are written first, so a
    /// crash in between leaves files that are recognisably acknowledged.
    func removeDeliveredFiles() throws(StreamUpError) {
        try writeMarks(SpoolMarks(acknowledged: recordedAcknowledged, newest: nil))
        let gone = files.withLock { files in
            defer { files = [] }
            return files
        }
        remove(gone)
    }

    // MARK: Marks

    private let acknowledgedMark: Mutex<Int>
    var recordedAcknowledged: Int { acknowledgedMark.withLock { $0 } }

    /// Overwrites `marks` in place (no new space needed).
    func writeMarks(_ marks: SpoolMarks) throws(StreamUpError) {
        acknowledgedMark.withLock { $0 = marks.acknowledged }
        try SystemCall.writeAll(descriptors.withLock { $0.marks }, marks.encoded, at: 0, "cannot update \(directory)/marks")
    }

    // MARK: Files

    static func path(of start: Int, in directory: String, suffix: String) -> String {
        "\(directory)/\(SpoolMarks.digits(start)).\(suffix)"
    }

    /// Creates (or empties) a spool file, refusing to follow a symbolic link; only its owner
    /// can read it, whatever the umask.
    static func create(_ path: String) throws(StreamUpError) -> CInt {
        let descriptor = try SystemCall.runBlocking("cannot create \(path)") {
            SystemCall.open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode: 0o600)
        }
        _ = fchmod(descriptor, 0o600)
        return descriptor
    }

    static func save(_ record: StreamRecord, in directory: String) throws(StreamUpError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        guard let data = try? encoder.encode(record) else { return }
        try AtomicFile.replace(at: "\(directory)/stream.json", with: Array(data) + [0x0A], throwing: StreamUpError.self)
    }
}
