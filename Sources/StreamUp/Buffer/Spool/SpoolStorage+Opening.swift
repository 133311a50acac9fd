import Foundation
import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Opening a spool: taking its lock, checking every pending byte against the index, and
/// refusing any damage with a message instead of sending what cannot be trusted.
extension SpoolStorage {
    /// Opens (or creates) the spool in `directory`, holding at most `capacity` unacknowledged
    /// bytes (more if an earlier run left more pending). A new stream gets `streamID`.
    ///
    /// Opening a spool with pending bytes writes nothing (a full file system can be drained);
    /// it may only cut off what a crash left half-written (bytes past the last index entry of
    /// the newest file, an empty newest file not yet recorded), which the producer reads again.
    /// - Throws: ``StreamUpError`` (`.io`) when the directory cannot be used, another process
    ///   holds it, or its files are damaged: a file missing or shorter than its index says, a
    ///   byte changed (CRC-32), an acknowledged offset past the end.
    static func open(directory: String, capacity: Int, streamID: String) throws(StreamUpError) -> SpoolStorage {
        guard capacity > 0 else { throw StreamUpError(.invalidConfiguration, "the spool needs a positive size") }
        try PrivateDirectory.make(directory, "cannot create spool directory \(directory)")
        guard let lock = try LockFile.take("\(directory)/lock", "cannot open \(directory)/lock") else {
            throw StreamUpError(.io, "spool \(directory) is in use by another streamup process; stop that one, or give each process a --spool of its own")
        }
        _ = fchmod(lock, 0o600)  // whatever the umask
        // What a kill in the middle of saving stream.json left (it is saved as segments are cut).
        AtomicFile.removeLeftovers(of: "\(directory)/stream.json")
        var opened: [File] = []
        do throws(StreamUpError) {
            try migrateVersion1(in: directory)
            var scan = try Scan(directory: directory)
            opened = scan.files
            let fileBytes = max(1, min(capacity / 4, 64 << 20))
            // Where the bytes still on disk came from, acknowledged ones included: files stay
            // until the saved positions cover them, so these may be ahead of the state file.
            let sources = scan.sources
            guard let record = scan.record, scan.end > scan.marks.acknowledged else {
                // Nothing pending: a new stream.
                for file in scan.files { remove(file, in: directory) }
                opened = []
                let record = StreamRecord(streamID: streamID)
                try save(record, in: directory)
                let marks = try openMarks(in: directory, writing: SpoolMarks(acknowledged: 0, newest: nil))
                return SpoolStorage(
                    directory: directory, capacity: capacity, fileBytes: fileBytes, files: [], lock: lock, marks: marks,
                    record: record,
                    recovered: Recovered(
                        acknowledged: 0, end: 0, streamID: streamID, upload: nil, skipped: 0, inputEnd: nil, cuts: [], sources: sources, notes: []))
            }
            try scan.verifyPending()
            try scan.applyRepairs()
            // Files wholly acknowledged (a crash before their deletion) are not needed.
            while scan.files.count > 1, let first = scan.files.first, first.end <= scan.marks.acknowledged {
                remove(scan.files.removeFirst(), in: directory)
            }
            opened = scan.files
            let marks = try openMarks(in: directory, writing: nil)
            let held = scan.end - scan.marks.acknowledged
            return SpoolStorage(
                directory: directory, capacity: max(capacity, held), fileBytes: fileBytes, files: scan.files, lock: lock,
                marks: marks, record: record,
                recovered: Recovered(
                    acknowledged: scan.marks.acknowledged, end: scan.end, streamID: record.streamID, upload: record.upload,
                    skipped: record.skipped ?? 0, inputEnd: record.inputEnd,
                    cuts: pendingCuts([record.cut] + (record.moreCuts ?? []), acknowledged: scan.marks.acknowledged, end: scan.end),
                    sources: sources, notes: scan.notes))
        } catch {
            for file in opened {
                SystemCall.close(file.data)
                SystemCall.close(file.index)
            }
            SystemCall.close(lock)
            throw error
        }
    }

    /// The saved cut `[start, end]` when it starts at or after the acknowledged offset and
    /// ends within the pending bytes; nil otherwise (acknowledged already, or not kept).
    static func pendingCut(_ cut: [Int]?, acknowledged: Int, end: Int) -> Range<Int>? {
        guard let cut, cut.count == 2, acknowledged <= cut[0], cut[0] < cut[1], cut[1] <= end else { return nil }
        return cut[0]..<cut[1]
    }

    /// The saved cuts that are pending (``pendingCut(_:acknowledged:end:)``) and follow each
    /// other: the first that is not, and any after it, are not kept.
    static func pendingCuts(_ cuts: [[Int]?], acknowledged: Int, end: Int) -> [Range<Int>] {
        var kept: [Range<Int>] = []
        for cut in cuts {
            guard let range = pendingCut(cut, acknowledged: acknowledged, end: end), kept.last.map({ $0.upperBound == range.lowerBound }) ?? true
            else { break }
            kept.append(range)
        }
        return kept
    }

    private static func remove(_ file: File, in directory: String) {
        SystemCall.close(file.data)
        SystemCall.close(file.index)
        unlink(path(of: file.start, in: directory, suffix: "spool"))
        unlink(path(of: file.start, in: directory, suffix: "index"))
    }

    /// The `marks` file, opened for in-place updates (and written first when `initial` is given).
    private static func openMarks(in directory: String, writing initial: SpoolMarks?) throws(StreamUpError) -> CInt {
        let path = "\(directory)/marks"
        let descriptor = try SystemCall.runBlocking("cannot open \(path)") {
            SystemCall.open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode: 0o600)
        }
        _ = fchmod(descriptor, 0o600)
        if let initial {
            do throws(StreamUpError) {
                try SystemCall.writeAll(descriptor, initial.encoded, at: 0, "cannot write \(path)")
            } catch {
                SystemCall.close(descriptor)
                throw error
            }
        }
        return descriptor
    }

    static func damaged(_ directory: String, _ what: String) -> StreamUpError {
        StreamUpError(.io, "spool \(directory) is damaged: \(what); nothing of it was sent (move the directory away to start afresh)")
    }

    /// What a spool directory holds, checked for consistency as it is read.
    ///
    /// Thread safety: a value type, used while opening only.
    struct Scan {
        let directory: String
        var files: [File] = []
        var marks = SpoolMarks(acknowledged: 0, newest: nil)
        var record: StreamRecord?
        /// Index entries per file, parallel to `files`.
        var entries: [[SpoolIndexEntry]] = []
        /// What opening changes once every check passed (``applyRepairs()``).
        var repairs: [Repair] = []
        /// What opening found and did about it, one line each for stderr.
        var notes: [String] = []

        var end: Int { files.last?.end ?? marks.acknowledged }

        /// Where every byte the spool still holds came from, acknowledged or not: files are
        /// kept until the saved positions cover them, and acknowledgements can run ahead of
        /// the last save, so what lies between the two must be folded too
        /// (``StreamUploader/fold(_:onto:streamID:)`` skips what the saved state covers).
        var sources: [SourceIndex.Entry] {
            entries.joined().compactMap(\.sourceEntry)
        }

        init(directory: String) throws(StreamUpError) {
            self.directory = directory
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: directory)
            } catch {
                throw StreamUpError(.io, "cannot list spool directory \(directory): \((error as NSError).localizedDescription)")
            }
            let data = Set(names.compactMap { Self.start(of: $0, suffix: ".spool") })
            let indexes = Set(names.compactMap { Self.start(of: $0, suffix: ".index") })
            if let lonely = data.subtracting(indexes).min() {
                throw damaged(directory, "\(SpoolMarks.digits(lonely)).spool has no index file")
            }
            if let lonely = indexes.subtracting(data).min() {
                throw damaged(directory, "the data file \(SpoolMarks.digits(lonely)).spool is missing")
            }
            let hasMarks = names.contains("marks")
            let hasRecord = names.contains("stream.json")
            if !data.isEmpty && !(hasMarks && hasRecord) {
                throw damaged(directory, "\(hasMarks ? "stream.json" : "marks") is missing")
            }
            if hasMarks {
                guard let bytes = try? AtomicFile.contents(at: "\(directory)/marks", throwing: StreamUpError.self), let marks = SpoolMarks(decoding: bytes)
                else {
                    throw damaged(directory, "its marks file is unreadable")
                }
                self.marks = marks
            }
            if hasRecord {
                guard let bytes = try? AtomicFile.contents(at: "\(directory)/stream.json", throwing: StreamUpError.self),
                    let record = try? JSONDecoder().decode(StreamRecord.self, from: Data(bytes))
                else {
                    throw damaged(directory, "stream.json is unreadable")
                }
                self.record = record
            }
            for start in data.sorted() {
                try open(start, isNewest: start == data.max())
            }
            try checkNewest()
            try checkContiguity()
        }

        private static func start(of name: String, suffix: String) -> Int? {
            guard name.hasSuffix(suffix), name.count == 20 + suffix.count else { return nil }
            return Int(name.dropLast(suffix.count))
        }

        /// Opens one file and its index; a half-written end of the newest file (a crash between
        /// writing bytes and recording them) is cut off, anything else amiss is damage.
        private mutating func open(_ start: Int, isNewest: Bool) throws(StreamUpError) {
            let dataPath = path(of: start, in: directory, suffix: "spool")
            let indexPath = path(of: start, in: directory, suffix: "index")
            let data = try SystemCall.runBlocking("cannot open \(dataPath)") { SystemCall.open(dataPath, O_RDWR | O_CLOEXEC | O_NOFOLLOW) }
            let index: CInt
            do {
                index = try SystemCall.runBlocking("cannot open \(indexPath)") { SystemCall.open(indexPath, O_RDWR | O_CLOEXEC | O_NOFOLLOW) }
            } catch {
                SystemCall.close(data)
                throw error
            }
            files.append(File(start: start, size: 0, data: data, index: index, entryCount: 0, lastEntry: nil))
            let name = "\(SpoolMarks.digits(start)).spool"
            var indexBytes = try Self.contents(of: index, path: indexPath)
            if indexBytes.count % SpoolIndexEntry.size != 0 {
                guard isNewest else { throw damaged(directory, "the index of \(name) is cut short") }
                indexBytes.removeLast(indexBytes.count % SpoolIndexEntry.size)
            }
            var list: [SpoolIndexEntry] = []
            var expected = start
            let count = indexBytes.count / SpoolIndexEntry.size
            for number in 0..<count {
                let entry = indexBytes.withUnsafeBytes { raw in
                    SpoolIndexEntry(decoding: UnsafeRawBufferPointer(rebasing: raw[number * SpoolIndexEntry.size..<(number + 1) * SpoolIndexEntry.size]))
                }
                guard let entry, entry.streamStart == expected else {
                    // A torn last entry of the newest file is what a crash mid-write leaves.
                    guard isNewest && number == count - 1 else { throw damaged(directory, "entry \(number) of the index of \(name) is damaged") }
                    break
                }
                list.append(entry)
                expected = entry.streamEnd
            }
            var status = stat()
            guard fstat(data, &status) == 0 else { throw StreamUpError(.io, "cannot stat \(dataPath)", errno: errno) }
            let size = Int(status.st_size)
            let indexed = expected - start
            if size < indexed {
                throw damaged(directory, "\(name) holds \(size) bytes but \(indexed) were written to it (bytes \(start + size)..<\(expected) are missing)")
            }
            var repair = Repair(file: files.count - 1, indexEntries: list.count, appended: [], dataLength: nil)
            if size > indexed {
                guard isNewest else { throw damaged(directory, "\(name) holds \(size - indexed) bytes that were never recorded") }
                let unindexed = size - indexed
                if (list.last ?? entries.last?.last)?.source != nil {
                    // Read from a followed file: it is read again from where the index ends.
                    repair.dataLength = indexed
                    notes.append(
                        "\(unindexed) bytes past the index of \(name) in \(directory) are left out: the file they came from is read again from where the index ends"
                    )
                } else {
                    // Nothing can read them again: what the data file holds is kept, checked from now on.
                    repair.appended = try Self.entries(of: data, path: dataPath, from: expected, to: start + size, fileStart: start)
                    list += repair.appended
                    expected = start + size
                    notes.append(
                        "\(unindexed) bytes at the end of \(name) in \(directory) were not in its index (a crash between two writes, or a damaged index): they are kept and sent"
                    )
                }
            }
            repairs.append(repair)
            files[files.count - 1].size = expected - start
            files[files.count - 1].entryCount = list.count
            files[files.count - 1].lastEntry = list.last
            entries.append(list)
        }

        /// Index entries (no source, CRC-32 as the bytes are now) for `from..<to` of a file.
        private static func entries(of data: CInt, path: String, from: Int, to end: Int, fileStart: Int) throws(StreamUpError) -> [SpoolIndexEntry] {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: SpoolIndexEntry.maxLength, alignment: 16)
            defer { buffer.deallocate() }
            var list: [SpoolIndexEntry] = []
            var position = from
            while position < end {
                let length = min(SpoolIndexEntry.maxLength, end - position)
                guard let crc = try crc32(of: data, at: position - fileStart, count: length, through: buffer, path: path) else {
                    throw StreamUpError(.io, "cannot read \(path): it ended early")
                }
                list.append(SpoolIndexEntry(streamStart: position, length: length, dataCRC: crc, mark: nil))
                position += length
            }
            return list
        }

        /// What opening changes in one file once the whole spool passed every check: index
        /// entries made for bytes the index did not cover, the index cut to its whole entries,
        /// the data cut to what the index covers (nil: left as it is).
        struct Repair {
            var file: Int
            var indexEntries: Int
            var appended: [SpoolIndexEntry]
            var dataLength: Int?
        }

        /// Makes the repairs: only after every check passed, so a spool refused as damaged
        /// is left exactly as it was found.
        func applyRepairs() throws(StreamUpError) {
            for repair in repairs where repair.file < files.count {
                let file = files[repair.file]
                let indexPath = path(of: file.start, in: directory, suffix: "index")
                for (number, entry) in repair.appended.enumerated() {
                    try SystemCall.writeAll(
                        file.index, entry.encoded, at: (repair.indexEntries + number) * SpoolIndexEntry.size, "cannot write \(indexPath)")
                }
                _ = ftruncate(file.index, off_t((repair.indexEntries + repair.appended.count) * SpoolIndexEntry.size))
                if let length = repair.dataLength { _ = ftruncate(file.data, off_t(length)) }
            }
        }

        /// The newest file must be the one `marks` recorded; a newer, empty one is what a crash
        /// right after creating it leaves.
        private mutating func checkNewest() throws(StreamUpError) {
            if let last = files.last, last.start != marks.newest, last.size == 0, last.start > (marks.newest ?? -1) {
                remove(files.removeLast(), in: directory)
                entries.removeLast()
                repairs.removeAll { $0.file >= files.count }
            }
            if let newest = marks.newest {
                guard files.last?.start == newest else {
                    if files.contains(where: { $0.start > newest }) {
                        throw damaged(directory, "it holds a file newer than it recorded")
                    }
                    throw damaged(directory, "its newest file \(SpoolMarks.digits(newest)).spool is missing")
                }
            } else if end > marks.acknowledged {
                // No newest file recorded: what is left must be a delivered run's files.
                throw damaged(directory, "it holds files it never recorded")
            }
        }

        private func checkContiguity() throws(StreamUpError) {
            for (previous, next) in zip(files, files.dropFirst()) where previous.end != next.start {
                throw damaged(directory, "bytes \(previous.end)..<\(next.start) are missing")
            }
            if marks.acknowledged > end {
                throw damaged(directory, "it records offset \(marks.acknowledged) as acknowledged, past the \(end) bytes it holds")
            }
            if let first = files.first, marks.acknowledged < first.start {
                throw damaged(directory, "bytes \(marks.acknowledged)..<\(first.start) are missing")
            }
        }

        /// Reads every pending byte and checks it against its entry's CRC-32. An entry may be
        /// longer than the buffer (one write makes one entry of up to the staging size, and an
        /// entry's length is whatever the index says): each is read in pieces.
        func verifyPending() throws(StreamUpError) {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: SpoolIndexEntry.maxLength, alignment: 16)
            defer { buffer.deallocate() }
            for (file, list) in zip(files, entries) {
                let dataPath = path(of: file.start, in: directory, suffix: "spool")
                for entry in list where entry.streamEnd > marks.acknowledged {
                    let crc = try Self.crc32(of: file.data, at: entry.streamStart - file.start, count: entry.length, through: buffer, path: dataPath)
                    guard crc == entry.dataCRC else {
                        throw damaged(
                            directory,
                            "bytes \(entry.streamStart)..<\(entry.streamEnd) of \(SpoolMarks.digits(file.start)).spool changed after they were written (CRC-32 mismatch)"
                        )
                    }
                }
            }
        }

        /// The CRC-32 of `count` bytes at `offset` of `descriptor`, read through `buffer` (of any
        /// size); nil when the file ends before them.
        private static func crc32(
            of descriptor: CInt, at offset: Int, count: Int, through buffer: UnsafeMutableRawBufferPointer, path: String
        ) throws(StreamUpError) -> UInt32? {
            var crc: UInt32 = 0
            var done = 0
            while done < count {
                let piece = min(buffer.count, count - done)
                let read = try SystemCall.runBlocking("cannot read \(path)") { pread(descriptor, buffer.baseAddress!, piece, off_t(offset + done)) }
                guard read > 0 else { return nil }
                crc = Checksum.crc32(UnsafeRawBufferPointer(rebasing: buffer[..<read]), continuing: crc)
                done += read
            }
            return crc
        }

        private static func contents(of descriptor: CInt, path: String) throws(StreamUpError) -> [UInt8] {
            var status = stat()
            guard fstat(descriptor, &status) == 0 else { throw StreamUpError(.io, "cannot stat \(path)", errno: errno) }
            return try SystemCall.readAll(descriptor, count: Int(status.st_size), at: 0, "cannot read \(path)")
        }
    }

    /// Turns a spool of the first format (`spool.json`, data files without index) into this
    /// one: the pending bytes are indexed as they are now (their CRCs start from here).
    private static func migrateVersion1(in directory: String) throws(StreamUpError) {
        struct Version1: Decodable {
            var streamID: String
            var acknowledged: Int
            var upload: ResumableUploadReference?
        }
        let legacy = "\(directory)/spool.json"
        guard let bytes = try? AtomicFile.contents(at: legacy, throwing: StreamUpError.self) else { return }
        guard let old = try? JSONDecoder().decode(Version1.self, from: Data(bytes)) else {
            throw damaged(directory, "spool.json is unreadable")
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        let starts = names.compactMap { name -> Int? in
            guard name.hasSuffix(".spool"), name.count == 26 else { return nil }
            return Int(name.dropLast(6))
        }.sorted()
        var buffer = [UInt8](repeating: 0, count: SpoolIndexEntry.maxLength)
        for start in starts {
            let dataPath = path(of: start, in: directory, suffix: "spool")
            let data = try SystemCall.runBlocking("cannot open \(dataPath)") { SystemCall.open(dataPath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) }
            defer { SystemCall.close(data) }
            let index = try create(path(of: start, in: directory, suffix: "index"))
            defer { SystemCall.close(index) }
            var offset = 0
            var slot = 0
            while true {
                let read = buffer.withUnsafeMutableBytes { raw in
                    SystemCall.retryingInterrupts { pread(data, raw.baseAddress!, raw.count, off_t(offset)) }
                }
                if read <= 0 { break }
                let crc = buffer.withUnsafeBytes { Checksum.crc32(UnsafeRawBufferPointer(rebasing: $0[..<read])) }
                let entry = SpoolIndexEntry(streamStart: start + offset, length: read, dataCRC: crc, mark: nil)
                try SystemCall.writeAll(index, entry.encoded, at: slot * SpoolIndexEntry.size, "cannot write the index of \(dataPath)")
                offset += read
                slot += 1
            }
        }
        try save(StreamRecord(streamID: old.streamID, upload: old.upload), in: directory)
        let marks = try openMarks(in: directory, writing: SpoolMarks(acknowledged: old.acknowledged, newest: starts.last))
        SystemCall.close(marks)
        unlink(legacy)
    }
}
