import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Waiting for room on a full disk: the backoff and the two lines of a spell (a pure machine),
/// and a writer whose storage has no room, on the manual clock.
@Suite struct StorageRoomTests {
    /// The wait doubles from the first delay up to its bound; only the first failure of a spell
    /// is said, and the write that works ends the spell with its length.
    @Test func theWaitDoublesUpToItsBoundAndOneLineSaysEachSpell() {
        var room = StorageRoom(firstDelay: .milliseconds(100), maxDelay: .seconds(1))
        let start = UploadClock.Instant(elapsed: .seconds(10))
        var retries: [Duration] = []
        var began: [Bool] = []
        var now = start
        for _ in 0..<6 {
            let (retryAt, first) = room.writeFailed(now: now)
            retries.append(now.duration(to: retryAt))
            began.append(first)
            now = retryAt
        }
        #expect(retries == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1)])
        #expect(began == [true, false, false, false, false, false])
        #expect(room.wrote(now: now) == start.duration(to: now))
        #expect(room.wrote(now: now) == nil, "a second write that works is no news")
        // A new spell starts from the first delay again.
        #expect(room.writeFailed(now: now) == (now.advanced(by: .milliseconds(100)), true))
    }
}

/// A writer whose storage has no room (ENOSPC) keeps its bytes and waits, on the upload's clock,
/// reading no more; it writes them once the storage has room, or drops them at a stop.
@Suite(.timeLimit(.minutes(1))) struct FullStorageWriterTests {
    /// Given a storage with no room, a write waits: it is tried again at each backoff instant
    /// on the clock (not before), and goes in whole once there is room.
    @Test func aWriteWaitsForRoomOnTheClockAndGoesInWhole() async throws {
        let clock = ManualClock()
        let storage = FillingStorage(capacity: 64, clock: UploadClock(clock))
        let buffer = ReplayBuffer(storage: storage, records: .lines, maxRecord: 64, clock: storage.clock)
        let writer = StreamWriter(buffer: buffer)
        storage.fail(with: ENOSPC)
        let writing = Task { try await writer.write(Array("one\ntwo\n".utf8)) }
        // The first try fails, and the writer sleeps until the retry instant (100 ms).
        try #require(await eventually { storage.failedCommits == 1 && clock.sleeperCount == 1 })
        #expect(buffer.writtenOffset == 0)
        clock.advance(by: .milliseconds(99))
        #expect(await eventually(within: .milliseconds(200)) { storage.failedCommits > 1 } == false, "tried again before its time")
        clock.advance(by: .milliseconds(1))
        try #require(await eventually { storage.failedCommits == 2 && clock.sleeperCount == 1 })
        // Then the disk has room: the next try (200 ms later) writes the bytes.
        storage.fail(with: nil)
        clock.advance(by: .milliseconds(200))
        try await writing.value
        #expect(buffer.writtenOffset == 8 && storage.failedCommits == 2)
        var bytes: [UInt8] = []
        try buffer.copy(0..<8) { bytes += $0 }
        #expect(String(decoding: bytes, as: UTF8.self) == "one\ntwo\n")
    }

    /// A thread writer (stdin's) waits the same way, and an acknowledgement, which may free the
    /// storage's own room, makes it try again at once, without the clock moving.
    @Test func anAcknowledgementMakesAThreadWriterTryAgainAtOnce() async throws {
        let clock = ManualClock()
        let storage = FillingStorage(capacity: 64, clock: UploadClock(clock))
        let buffer = ReplayBuffer(storage: storage, records: .lines, maxRecord: 64, clock: storage.clock)
        let writer = StreamWriter(buffer: buffer)
        try await writer.write(Array("first\n".utf8))
        storage.fail(with: EDQUOT)
        let writing = Task {
            try await writer.runBlocking { blocking in try blocking.write(Array("second\n".utf8), mark: nil) }
        }
        try #require(await eventually { storage.failedCommits == 1 && clock.sleeperCount == 1 })
        storage.fail(with: nil)
        buffer.acknowledge(upTo: 6)
        try await writing.value
        #expect(buffer.acknowledgedOffset == 6 && buffer.writtenOffset == 13)
    }

    /// A stop while the write waits for room drops the bytes it holds (they were never in the
    /// storage) and says how many; nothing else is lost or added.
    @Test func aStopWhileWaitingForRoomDropsTheHeldBytesAndSaysHowMany() async throws {
        let clock = ManualClock()
        let storage = FillingStorage(capacity: 64, clock: UploadClock(clock))
        let buffer = ReplayBuffer(storage: storage, records: .lines, maxRecord: 64, clock: storage.clock)
        let dropped = Locked<[Int]>([])
        buffer.onHeldDropped = { count in dropped.withLock { $0.append(count) } }
        let writer = StreamWriter(buffer: buffer)
        try await writer.write(Array("kept\n".utf8))
        storage.fail(with: ENOSPC)
        let writing = Task { try await writer.write(Array("held\n".utf8)) }
        try #require(await eventually { storage.failedCommits == 1 && clock.sleeperCount == 1 })
        buffer.finishWriting(stopped: true)
        await #expect(throws: StreamUpError.self) { try await writing.value }
        #expect(dropped.withLock { $0 } == [5])
        #expect(buffer.writtenOffset == 5 && buffer.failure == nil)
    }

    /// A write that must not wait (an emitter's `tryEmit`) finds a full disk as it finds a full
    /// buffer: nothing is written, and it says so at once; once there is room it goes in.
    @Test func aWriteThatMustNotWaitFindsAFullDiskFull() throws {
        let storage = FillingStorage(capacity: 64, clock: UploadClock(ManualClock()))
        let buffer = ReplayBuffer(storage: storage, records: .lines, maxRecord: 64, clock: storage.clock)
        let writer = StreamWriter(buffer: buffer)
        storage.fail(with: ENOSPC)
        let record = Array("record\n".utf8)
        #expect(try record.withUnsafeBytes { try writer.tryWrite($0) } == .full)
        #expect(buffer.writtenOffset == 0 && buffer.failure == nil)
        storage.fail(with: nil)
        #expect(try record.withUnsafeBytes { try writer.tryWrite($0) } == .written)
        #expect(buffer.writtenOffset == 7)
    }

    /// Any other storage error (EIO) fails the buffer at once, as before.
    @Test func anotherStorageErrorFailsTheBuffer() async throws {
        let storage = FillingStorage(capacity: 64, clock: .continuous)
        let buffer = ReplayBuffer(storage: storage, records: .lines, maxRecord: 64)
        let writer = StreamWriter(buffer: buffer)
        storage.fail(with: EIO)
        await #expect(throws: StreamUpError.self) { try await writer.write(Array("line\n".utf8)) }
        #expect(buffer.failure?.errno == EIO && buffer.writtenOffset == 0)
    }
}

/// A memory storage whose commits fail with a chosen errno, and which waits for room as a
/// spool does (``StorageRoom`` on the clock given).
///
/// Thread safety: `state` is guarded by its lock; the ring is the memory storage's.
final class FillingStorage: ReplayStorage, @unchecked Sendable {
    let memory: MemoryReplayStorage
    let clock: UploadClock
    private let state = Locked<(errno: CInt?, failed: Int, room: StorageRoom)>((nil, 0, StorageRoom()))

    init(capacity: Int, clock: UploadClock) {
        memory = MemoryReplayStorage(capacity: capacity)
        self.clock = clock
    }

    /// Commits fail with `code` from now on (nil: they work).
    func fail(with code: CInt?) { state.withLock { $0.errno = code } }
    var failedCommits: Int { state.withLock { $0.failed } }

    var capacity: Int { memory.capacity }
    var isDurable: Bool { true }
    func writableSpace(at offset: Int, maxLength: Int) -> UnsafeMutableRawBufferPointer {
        memory.writableSpace(at: offset, maxLength: maxLength)
    }
    func commit(_ space: UnsafeMutableRawBufferPointer, count: Int, at offset: Int, mark: SourceMark?) throws(StreamUpError) {
        let code = state.withLock { state -> CInt? in
            if state.errno != nil { state.failed += 1 }
            return state.errno
        }
        if let code { throw StreamUpError(.io, "write failed", errno: code) }
    }
    func read(at offset: Int, into destination: UnsafeMutableRawBufferPointer) throws(StreamUpError) -> Int {
        memory.read(at: offset, into: destination)
    }
    func acknowledge(upTo offset: Int, releasingBelow releasable: Int, written: Int) throws(StreamUpError) {
        memory.acknowledge(upTo: offset, releasingBelow: releasable, written: written)
    }
    func retryTime(after error: StreamUpError) -> UploadClock.Instant? {
        guard error.isOutOfRoom else { return nil }
        let now = clock.now
        return state.withLock { $0.room.writeFailed(now: now).retryAt }
    }
}
