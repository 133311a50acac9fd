import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// A spool on a small file system of its own (tmpfs) that fills up and is freed again.
@Suite(.timeLimit(.minutes(1))) struct SpoolFullDiskTests {
    /// A `stream.json` that cannot be written on a full disk waits in memory (no error for the
    /// delivery to retry as a failing delivery): one line says the spool is full, and the record
    /// is written with the next write that works, which one line says.
    @Test(.enabled(if: SmallFileSystem.isAvailable)) func aStreamRecordWaitsForRoomAndIsWrittenWithTheNextWrite() throws {
        let scratch = try TemporaryDirectory()
        let disk = try SmallFileSystem(at: scratch.file("disk"))
        defer { disk.unmount() }
        let directory = disk.path + "/spool"
        let spool = try SpoolStorage.open(directory: directory, capacity: 4096, streamID: "s")
        let lines = Locked<[String]>([])
        spool.setNotice { line in lines.withLock { $0.append(line) } }
        // Given a full disk, two records cannot be written…
        disk.fill(with: disk.path + "/filler")
        try spool.saveCuts([0..<3])
        try spool.saveCuts([0..<3, 3..<6])
        #expect(lines.withLock { $0.count } == 1 && lines.withLock { $0 }.first?.contains("is full") == true, "\(lines.withLock { $0 })")
        #expect(try record(in: directory).cut == nil)
        // …until space is freed: the next spool write that works writes the newest record too.
        try FileManager.default.removeItem(atPath: disk.path + "/filler")
        let buffer = ReplayBuffer(storage: spool, records: .rawBytes, maxRecord: spool.capacity)
        let wrote = try buffer.withWritableSpace(maxLength: 6, mark: nil) { space in
            Array("abcdef".utf8).withUnsafeBytes { space.copyMemory(from: $0) }
            return 6
        }
        #expect(wrote == 6)
        #expect(lines.withLock { $0.count } == 2 && lines.withLock { $0 }.last?.contains("writing again") == true, "\(lines.withLock { $0 })")
        let saved = try record(in: directory)
        #expect(saved.cut == [0, 3] && saved.moreCuts == [[3, 6]])
    }

    private func record(in directory: String) throws -> SpoolStorage.StreamRecord {
        try JSONDecoder().decode(SpoolStorage.StreamRecord.self, from: Data(contentsOf: URL(fileURLWithPath: directory + "/stream.json")))
    }
}
