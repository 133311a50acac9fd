import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// The spool: what was not acknowledged survives a reopen; every kind of damage is refused
/// with a message instead of being sent; what a crash leaves is not damage; draining a spool
/// needs no new disk space.
@Suite struct SpoolStorageTests {
    /// A spool directory path (not yet created) inside `temporary`, which removes it.
    private func temporarySpool(in temporary: TemporaryDirectory) -> String {
        temporary.file("spool")
    }

    /// A buffer over a fresh spool of `capacity` bytes (files of a quarter of that).
    private func buffer(_ directory: String, capacity: Int = 40, streamID: String = "s") throws -> ReplayBuffer {
        let spool = try SpoolStorage.open(directory: directory, capacity: capacity, streamID: streamID)
        let recovered = spool.recovered
        return ReplayBuffer(
            storage: spool, records: .rawBytes, maxRecord: spool.capacity,
            acknowledged: recovered.acknowledged, written: recovered.end)
    }

    private func write(_ bytes: [UInt8], to buffer: ReplayBuffer, mark: SourceMark? = nil) throws {
        var offset = 0
        while offset < bytes.count {
            let piece = mark.map { StreamWriter.mark($0, forBytes: offset, of: bytes.count) }
            let outcome = try bytes.withUnsafeBytes { source in
                try buffer.withWritableSpace(maxLength: source.count - offset, mark: piece) { space in
                    space.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[offset..<offset + space.count]))
                    return space.count
                }
            }
            guard let count = outcome else { throw StreamUpError(.io, "buffer full") }
            offset += count
        }
    }

    private func read(_ buffer: ReplayBuffer, _ range: Range<Int>) throws -> [UInt8] {
        var bytes: [UInt8] = []
        try buffer.copy(range) { bytes += $0 }
        return bytes
    }

    private func damage(_ directory: String, _ change: (String) throws -> Void) throws -> StreamUpError? {
        try change(directory)
        let before = try contents(of: directory)
        let error = #expect(throws: StreamUpError.self) { try SpoolStorage.open(directory: directory, capacity: 40, streamID: "new") }
        // A refused spool is left as it was found: nothing deleted, nothing cut.
        #expect(try contents(of: directory) == before)
        return error
    }

    /// Every file of `directory` but the lock, by name.
    private func contents(of directory: String) throws -> [String: Data] {
        var result: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) where name != "lock" {
            result[name] = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(name)"))
        }
        return result
    }

    /// A spool in `temporary` holding 30 bytes, 12 of them acknowledged, in files of 10 bytes.
    private func spoolWithPendingBytes(in temporary: TemporaryDirectory) throws -> String {
        let directory = temporarySpool(in: temporary)
        let replay = try buffer(directory)
        try write(Array(0..<30), to: replay)
        replay.acknowledge(upTo: 12)
        return directory
    }

    private func file(_ directory: String, _ start: Int, _ suffix: String) -> String {
        "\(directory)/\(String(repeating: "0", count: 20 - String(start).count))\(start).\(suffix)"
    }

    /// What was not acknowledged survives the process: a second open finds it, under the same
    /// stream id and offsets, across several spool files; wholly acknowledged files are gone.
    @Test func pendingBytesSurviveAReopen() throws {
        let temporary = try TemporaryDirectory()
        let directory = try spoolWithPendingBytes(in: temporary)
        let spool = try SpoolStorage.open(directory: directory, capacity: 40, streamID: "second")
        #expect(spool.recovered.acknowledged == 12 && spool.recovered.end == 30 && spool.recovered.streamID == "s")
        let replay = ReplayBuffer(storage: spool, records: .rawBytes, maxRecord: 40, acknowledged: 12, written: 30)
        #expect(try read(replay, 12..<30) == Array(12..<30))
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".spool") }.sorted()
        #expect(files == ["00000000000000000010.spool", "00000000000000000020.spool"])
    }

    /// Every segment cut and out when the process ended is found again by the next start, in
    /// stream order, so each is sent again byte for byte; a saved cut that no longer follows
    /// the one before it (or lies outside the pending bytes) ends the list.
    @Test func everyCutOutSurvivesAReopen() throws {
        let temporary = try TemporaryDirectory()
        let directory = temporarySpool(in: temporary)
        do {
            let spool = try SpoolStorage.open(directory: directory, capacity: 40, streamID: "s")
            let replay = ReplayBuffer(storage: spool, records: .rawBytes, maxRecord: 40)
            try write(Array(0..<30), to: replay)
            replay.acknowledge(upTo: 12)
            try spool.saveCuts([12..<18, 18..<25, 25..<30])
        }
        let spool = try SpoolStorage.open(directory: directory, capacity: 40, streamID: "second")
        #expect(spool.recovered.cuts == [12..<18, 18..<25, 25..<30])
        #expect(SpoolStorage.pendingCuts([[12, 18], [19, 25]], acknowledged: 12, end: 30) == [12..<18])
        #expect(SpoolStorage.pendingCuts([[0, 10], [10, 20]], acknowledged: 12, end: 30) == [])
    }

    /// A spool whose bytes were all acknowledged starts a new stream at offset 0.
    @Test func anEmptiedSpoolStartsANewStream() throws {
        let temporary = try TemporaryDirectory()
        let directory = temporarySpool(in: temporary)
        do {
            let replay = try buffer(directory, capacity: 16, streamID: "first")
            try write([1, 2, 3], to: replay)
            replay.acknowledge(upTo: 3)
        }
        let spool = try SpoolStorage.open(directory: directory, capacity: 16, streamID: "second")
        #expect(spool.recovered.acknowledged == 0 && spool.recovered.end == 0 && spool.recovered.streamID == "second")
    }

    /// Two users cannot share a spool.
    @Test func aSpoolInUseIsRefused() throws {
        let temporary = try TemporaryDirectory()
        let directory = temporarySpool(in: temporary)
        let held = try SpoolStorage.open(directory: directory, capacity: 40, streamID: "s")
        let error = #expect(throws: StreamUpError.self) { try SpoolStorage.open(directory: directory, capacity: 40, streamID: "s") }
        #expect(error?.description.contains("in use by another streamup process; stop that one, or give each process a --spool of its own") == true)
        _ = held
    }

    /// Every damage is refused, never sent: the newest file cut short, deleted with or without
    /// its index, a byte changed, a middle file gone, an acknowledged offset past the end. Each
    /// says the spool is damaged and what to do.
    @Test(arguments: [
        "truncated newest", "deleted newest", "deleted newest data", "garbled byte", "deleted middle", "acknowledged past end", "index entry changed",
    ])
    func damageIsRefusedWithAMessage(kind: String) throws {
        let temporary = try TemporaryDirectory()
        let directory = try spoolWithPendingBytes(in: temporary)
        let error = try damage(directory) { directory in
            switch kind {
            case "truncated newest":
                truncate(file(directory, 20, "spool"), 4)
            case "deleted newest":
                try FileManager.default.removeItem(atPath: file(directory, 20, "spool"))
                try FileManager.default.removeItem(atPath: file(directory, 20, "index"))
            case "deleted newest data":
                try FileManager.default.removeItem(atPath: file(directory, 20, "spool"))
            case "garbled byte":
                let handle = try #require(FileHandle(forUpdatingAtPath: file(directory, 10, "spool")))
                try handle.seek(toOffset: 5)
                try handle.write(contentsOf: Data([0xFF]))
                try handle.close()
            case "deleted middle":
                try FileManager.default.removeItem(atPath: file(directory, 10, "spool"))
                try FileManager.default.removeItem(atPath: file(directory, 10, "index"))
            case "acknowledged past end":
                try Data(SpoolMarks(acknowledged: 35, newest: 20).encoded).write(to: URL(fileURLWithPath: directory + "/marks"))
            case "index entry changed":
                let handle = try #require(FileHandle(forUpdatingAtPath: file(directory, 10, "index")))
                try handle.seek(toOffset: 9)
                try handle.write(contentsOf: Data([0x7F]))
                try handle.close()
            default:
                Issue.record("unknown damage \(kind)")
            }
        }
        let description = error?.description ?? ""
        #expect(
            description.contains("is damaged") && description.contains("nothing of it was sent") && description.contains("move the directory away"),
            "\(kind): \(description)")
    }

    /// What a crash leaves is not damage: bytes written past the last index entry of the newest
    /// file (a crash between the two writes) are kept when nothing can read them again (stdin),
    /// with a line saying so, and indexed from then on.
    @Test func aCrashBetweenDataAndIndexIsNotDamage() throws {
        let temporary = try TemporaryDirectory()
        let directory = try spoolWithPendingBytes(in: temporary)
        let handle = try #require(FileHandle(forUpdatingAtPath: file(directory, 20, "spool")))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([1, 2, 3]))
        try handle.close()
        do {
            let spool = try SpoolStorage.open(directory: directory, capacity: 40, streamID: "new")
            #expect(spool.recovered.end == 33)
            #expect(spool.recovered.notes.count == 1 && spool.recovered.notes[0].contains("3 bytes at the end of"), "\(spool.recovered.notes)")
        }
        let again = try SpoolStorage.open(directory: directory, capacity: 40, streamID: "new")
        #expect(again.recovered.end == 33 && again.recovered.notes.isEmpty)
        let replay = ReplayBuffer(storage: again, records: .rawBytes, maxRecord: 40, acknowledged: 12, written: 33)
        #expect(try read(replay, 12..<33) == Array(12..<30) + [1, 2, 3])
    }

    /// Bytes past the index of a followed file's bytes are cut off, with a line saying so: the
    /// file is read again from where the index ends (they would be sent twice).
    @Test func bytesPastTheIndexOfAFollowedFileAreReadAgain() throws {
        let temporary = try TemporaryDirectory()
        let directory = temporarySpool(in: temporary)
        do {
            let replay = try buffer(directory, capacity: 1000)
            try write(Array(repeating: 65, count: 100), to: replay, mark: .verbatim(SourceID(device: 1, inode: 10), from: 0))
        }
        let handle = try #require(FileHandle(forUpdatingAtPath: file(directory, 0, "spool")))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([65, 65]))
        try handle.close()
        let spool = try SpoolStorage.open(directory: directory, capacity: 1000, streamID: "new")
        #expect(spool.recovered.end == 100)
        #expect(spool.recovered.notes.count == 1 && spool.recovered.notes[0].contains("read again"), "\(spool.recovered.notes)")
        let size = try FileManager.default.attributesOfItem(atPath: file(directory, 0, "spool"))[.size] as? NSNumber
        #expect(size?.intValue == 100)
    }

    /// An emptied index of the newest file, or one whose only entry has two bytes changed, lost
    /// the file's bytes (the data was cut to what the index covered, exit 0, no word): what the
    /// data file holds is kept and indexed again, with one line saying so.
    @Test(arguments: ["emptied", "two bytes changed"])
    func aDamagedIndexOfTheNewestFileLosesNothing(kind: String) throws {
        let temporary = try TemporaryDirectory()
        let directory = try spoolWithPendingBytes(in: temporary)
        let index = file(directory, 20, "index")
        if kind == "emptied" {
            truncate(index, 0)
        } else {
            let handle = try #require(FileHandle(forUpdatingAtPath: index))
            try handle.seek(toOffset: 8)
            try handle.write(contentsOf: Data([0xFF, 0xFF]))
            try handle.close()
        }
        do {
            let spool = try SpoolStorage.open(directory: directory, capacity: 40, streamID: "new")
            #expect(spool.recovered.end == 30)
            #expect(spool.recovered.notes.count == 1 && spool.recovered.notes[0].contains("10 bytes at the end of"), "\(spool.recovered.notes)")
        }
        let again = try SpoolStorage.open(directory: directory, capacity: 40, streamID: "new")
        let replay = ReplayBuffer(storage: again, records: .rawBytes, maxRecord: 40, acknowledged: 12, written: again.recovered.end)
        #expect(try read(replay, 12..<30) == Array(12..<30))
    }

    /// Opening a spool with pending bytes, sending them and acknowledging them writes no new
    /// bytes to disk: a spool that filled its file system can be drained once the receiver is
    /// back (only `marks` is rewritten in place, and files are deleted).
    @Test func drainingNeedsNoNewSpace() throws {
        let temporary = try TemporaryDirectory()
        let directory = try spoolWithPendingBytes(in: temporary)
        func sizes() throws -> [String: Int] {
            var sizes: [String: Int] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
                sizes[name] = (try FileManager.default.attributesOfItem(atPath: directory + "/" + name)[.size] as? NSNumber)?.intValue
            }
            return sizes
        }
        let before = try sizes()
        let spool = try SpoolStorage.open(directory: directory, capacity: 40, streamID: "new")
        let replay = ReplayBuffer(storage: spool, records: .rawBytes, maxRecord: 40, acknowledged: 12, written: 30)
        #expect(try read(replay, 12..<30) == Array(12..<30))
        replay.acknowledge(upTo: 25)
        let after = try sizes()
        #expect(Set(after.keys).isSubset(of: Set(before.keys)), "files were created: \(after.keys.sorted())")
        for (name, size) in after {
            #expect(size <= before[name] ?? 0, "\(name) grew from \(before[name] ?? 0) to \(size)")
        }
    }

    /// Without a size, a spool takes 1 GiB or half of what its file system has free, whichever
    /// is smaller, so it cannot fill the file system by itself.
    @Test func theDefaultSizeLeavesHalfTheFreeSpace() throws {
        let temporary = try TemporaryDirectory()
        let directory = temporarySpool(in: temporary)
        var status = statvfs()
        #expect(statvfs(FileManager.default.temporaryDirectory.path, &status) == 0)
        let free = Int(status.f_bavail) * Int(status.f_frsize)
        let capacity = SpoolStorage.defaultCapacity(for: directory)
        #expect(capacity <= 1 << 30 && capacity <= max(free / 2, 1 << 20) + (64 << 20))
    }

    /// The index keeps where bytes came from: a restart learns where each source stands at the
    /// end of what the spool holds, past what a saved state says.
    @Test func sourcePositionsAreRecoveredFromTheIndex() throws {
        let temporary = try TemporaryDirectory()
        let directory = temporarySpool(in: temporary)
        let a = SourceID(device: 1, inode: 10)
        let b = SourceID(device: 1, inode: 20)
        do {
            let replay = try buffer(directory, capacity: 1000)
            try write(Array(repeating: 65, count: 100), to: replay, mark: .verbatim(a, from: 0))
            try write(Array(repeating: 66, count: 50), to: replay, mark: .verbatim(b, from: 500))
            try write(Array(repeating: 65, count: 10), to: replay, mark: .verbatim(a, from: 100))
        }
        let spool = try SpoolStorage.open(directory: directory, capacity: 1000, streamID: "x")
        let saved = SourceState(streamID: "s", streamOffset: 100, sources: [SourcePosition(source: a, path: "/a", offset: 100)])
        let folded = StreamUploader.fold(spool.recovered.sources, onto: saved, streamID: spool.recovered.streamID)
        #expect(folded.sources.map(\.offset) == [550, 110])
        #expect(folded.sources.map(\.source) == [b, a])
        #expect(folded.streamOffset == 160)
    }

    /// Writes of any size, 1 B to 4 MiB (the spool takes each in pieces of up to 256 KiB, one
    /// index entry per piece, longer than the 64 KiB an entry grows to), survive a reopen byte
    /// for byte: opening checks each entry whole, however long (it read every entry into a
    /// 64 KiB buffer: a heap overflow, `malloc(): corrupted top size`).
    @Test func writesOfAnySizeSurviveAReopen() throws {
        var random = SeededRandom()
        let temporary = try TemporaryDirectory()
        let directory = temporarySpool(in: temporary)
        var written: [UInt8] = []
        do {
            let replay = try buffer(directory, capacity: 32 << 20)
            while written.count < 10 << 20 {
                // Sizes spread evenly over their order of magnitude: as many tiny writes as huge ones.
                let size = min(4 << 20, Int(pow(2, Double.random(in: 0...22, using: &random))))
                let bytes = random.bytes(size)
                try write(bytes, to: replay)
                written += bytes
            }
            replay.acknowledge(upTo: written.count / 3)
        }
        let spool = try SpoolStorage.open(directory: directory, capacity: 32 << 20, streamID: "second")
        #expect(spool.recovered.end == written.count && spool.recovered.acknowledged == written.count / 3, "\(random)")
        let replay = ReplayBuffer(
            storage: spool, records: .rawBytes, maxRecord: spool.capacity,
            acknowledged: spool.recovered.acknowledged, written: spool.recovered.end)
        #expect(try read(replay, written.count / 3..<written.count) == Array(written[(written.count / 3)...]), "\(random)")
    }

    /// A byte changed far into an entry longer than 64 KiB is seen: the whole entry is checked.
    @Test func aChangedByteDeepInALongEntryIsRefused() throws {
        let temporary = try TemporaryDirectory()
        let directory = temporarySpool(in: temporary)
        do {
            let replay = try buffer(directory, capacity: 16 << 20)
            try write(Array(repeating: 0x61, count: 1 << 20), to: replay)
        }
        let handle = try #require(FileHandle(forUpdatingAtPath: file(directory, 0, "spool")))
        try handle.seek(toOffset: 200_000)
        try handle.write(contentsOf: Data([0x62]))
        try handle.close()
        let error = #expect(throws: StreamUpError.self) { try SpoolStorage.open(directory: directory, capacity: 16 << 20, streamID: "new") }
        #expect(error?.description.contains("CRC-32 mismatch") == true, "\(String(describing: error))")
    }
}
