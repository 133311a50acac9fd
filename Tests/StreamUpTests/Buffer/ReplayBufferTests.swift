import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// The one buffer of an acknowledged upload: bytes stay until acknowledged, a full buffer
/// makes the producer wait until an acknowledgement, record boundaries are found as bytes are
/// written, and acknowledgements map back to source positions.
@Suite struct ReplayBufferTests {
    /// A producer that finds the buffer full waits; an acknowledgement lets it go on, and the
    /// bytes it wrote are read back by offset.
    @Test func aFullBufferHoldsTheProducerUntilAnAcknowledgement() async throws {
        let buffer = ReplayBuffer(capacity: 16)
        let writer = StreamWriter(buffer: buffer)
        try await writer.write(Array(0..<16))
        #expect(writer.availableSpace == 0)
        // Given a full buffer, the next write waits…
        let waiting = Task { try await writer.write([16, 17, 18, 19]) }
        #expect(await eventually { buffer.pauses.count > 0 })
        #expect(buffer.heldCount == 16 && buffer.pauses.count == 1)
        // …until an acknowledgement frees room.
        buffer.acknowledge(upTo: 8)
        try await waiting.value
        #expect(buffer.acknowledgedOffset == 8 && buffer.writtenOffset == 20)
        var bytes: [UInt8] = []
        try buffer.copy(8..<20) { bytes += $0 }
        #expect(bytes == Array(8..<20))
    }

    /// An acknowledgement may hold back the producer it frees (the delivery task does until its
    /// next request has started); a task that then waits on the buffer wakes it first, so what
    /// it waits for (bytes only that producer writes) comes, and nothing waits for ever.
    @Test func aHeldBackProducerIsWokenBeforeATaskWaitsOnTheBuffer() async throws {
        let (buffer, waiting) = try await Self.heldBackProducer()
        // Bytes past 16 come from the held-back producer alone (a wait that ends at its
        // deadline instead fails the test).
        await buffer.waitUntilReadable(from: 16, until: buffer.clock.now.advanced(by: .seconds(20)))
        try #require(buffer.writtenOffset == 20, "the held-back producer was not woken")
        try await waiting.value
        #expect(buffer.wakesHeld == 0)
    }

    /// The delivery task wakes what it held back itself, once its next request started.
    @Test func aHeldBackProducerGoesOnWhenTheHolderWakesIt() async throws {
        let (buffer, waiting) = try await Self.heldBackProducer()
        buffer.wakeHeld()
        try await waiting.value
        #expect(buffer.wakesHeld == 0 && buffer.writtenOffset == 20)
    }

    /// A full buffer of 16 bytes whose producer waits to write 4 more, and an acknowledgement of
    /// 8 that holds it back: the buffer, and the producer's write.
    private static func heldBackProducer() async throws -> (ReplayBuffer, Task<Void, Error>) {
        let buffer = ReplayBuffer(capacity: 16)
        let writer = StreamWriter(buffer: buffer)
        try await writer.write(Array(0..<16))
        let waiting = Task { try await writer.write([16, 17, 18, 19]) }
        #expect(await eventually { buffer.pauses.count > 0 })
        buffer.acknowledge(upTo: 8, wakingLater: true)
        #expect(buffer.wakesHeld == 1 && buffer.writtenOffset == 16)
        return (buffer, waiting)
    }

    /// Memory follows what is unacknowledged, not the capacity: after 64 MiB went through an
    /// 8 MiB buffer acknowledged a quarter MiB behind, only about that much of its ring is
    /// resident (`mincore`), and the held bytes read back intact.
    @Test func acknowledgedPagesAreHandedBack() throws {
        let capacity = 8 << 20
        let piece = 256 << 10
        let buffer = ReplayBuffer(capacity: capacity)
        let storage = try #require(buffer.storage as? MemoryReplayStorage)
        func byte(_ offset: Int) -> UInt8 { UInt8(offset % 251 + 1) }
        // Given: 64 MiB written in pieces, each acknowledged once the next is written.
        for _ in 0..<(64 << 20) / piece {
            let start = buffer.writtenOffset
            var left = piece
            while left > 0 {
                guard
                    let count = try buffer.withWritableSpace(
                        maxLength: left, mark: nil,
                        { space in
                            let at = buffer.writtenOffset
                            for index in space.indices { space[index] = byte(at + index) }
                            return space.count
                        })
                else {
                    Issue.record("the buffer had no room")
                    return
                }
                left -= count
            }
            buffer.acknowledge(upTo: max(0, start - 1))
        }
        // Then: the held bytes are intact…
        let held = buffer.acknowledgedOffset..<buffer.writtenOffset
        var mismatches = 0
        var offset = held.lowerBound
        try buffer.copy(held) { bytes in
            for value in bytes {
                if value != byte(offset) { mismatches += 1 }
                offset += 1
            }
        }
        #expect(mismatches == 0 && offset == held.upperBound)
        // …and what is resident is about them, not the 8 MiB of the ring.
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        var resident = [UInt8](repeating: 0, count: storage.mapping.count / pageSize)
        #expect(mincore(storage.mapping.baseAddress, storage.mapping.count, &resident) == 0)
        let residentBytes = resident.filter { $0 & 1 != 0 }.count * pageSize
        #expect(residentBytes <= held.count + 2 * piece, "\(residentBytes) bytes resident for \(held.count) held")
    }

    /// A producer faster than the network keeps the buffer full: when a segment (half the ring)
    /// is acknowledged, the next fills the other half, and the pages the writer is about to
    /// write again stay resident (dropping them would only fault them in again).
    @Test func pagesTheWriterReusesSoonStay() throws {
        let capacity = 8 << 20
        let buffer = ReplayBuffer(capacity: capacity)
        let storage = try #require(buffer.storage as? MemoryReplayStorage)
        // Given: a full ring, of which the first half is acknowledged.
        while buffer.writtenOffset < capacity {
            guard
                try buffer.withWritableSpace(
                    maxLength: capacity - buffer.writtenOffset, mark: nil,
                    { space in
                        for index in space.indices { space[index] = 1 }
                        return space.count
                    }) != nil
            else {
                Issue.record("the buffer had no room")
                return
            }
        }
        buffer.acknowledge(upTo: capacity / 2)
        // Then: the whole ring is still resident.
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        var resident = [UInt8](repeating: 0, count: storage.mapping.count / pageSize)
        #expect(mincore(storage.mapping.baseAddress, storage.mapping.count, &resident) == 0)
        #expect(resident.filter { $0 & 1 != 0 }.count == resident.count)
    }

    /// Boundaries: the last newline of a write, unless a record grows past `maxRecord`, which is
    /// then cut into pieces of that size (also when its newline comes in the same write).
    @Test func recordBoundariesAndSplits() {
        func boundaries(_ text: String, at offset: Int = 0, after boundary: Int = 0, max: Int) -> (Int, [Int]) {
            Array(text.utf8).withUnsafeBytes { ReplayBuffer.boundaries(in: $0, at: offset, after: boundary, maxRecord: max) }
        }
        #expect(boundaries("ab\ncd\nef", max: 100) == (6, []))
        #expect(boundaries("no newline", max: 100) == (0, []))
        #expect(boundaries("aaaaaaaaaa\nb\n", max: 4) == (13, [4, 8]))
        #expect(boundaries("bbbbb", at: 10, after: 7, max: 4) == (15, [11, 15]))
        #expect(boundaries("x\n", at: 10, after: 7, max: 4) == (12, [11]))
    }

    /// The async waiter for input wakes when a whole record is written, not at a partial one.
    @Test func readersWaitForAWholeRecord() async throws {
        let buffer = ReplayBuffer(capacity: 64, records: .lines)
        let writer = StreamWriter(buffer: buffer)
        try await writer.write(Array("partial".utf8))
        let readable = Task { await buffer.waitUntilReadable(from: 0) }
        // Given: the waiter is parked at the partial record, not woken by it.
        try #require(await eventually { buffer.withState { $0.readableWaitOffsets.count } == 1 })
        try await writer.write(Array(" line\n".utf8))
        await readable.value
        #expect(buffer.withState { $0.boundary } == 13)
    }

    /// A last record without its newline, longer than a segment, at the start of a segment: the
    /// input's end is its boundary, so the segment carries it whole (this once stopped the
    /// process: "no record boundary").
    @Test func aLastRecordWithoutNewlineLongerThanASegmentGoesWhole() async throws {
        let buffer = ReplayBuffer(capacity: 4096, records: .lines)
        let writer = StreamWriter(buffer: buffer)
        try await writer.write(Array("first\n".utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: 1_500))
        writer.finish()
        let limits = SegmentLimits(maxBytes: 1_000, maxDuration: .seconds(1))
        #expect(buffer.segmentRange(from: 0, limits: limits) == 0..<6)
        #expect(buffer.segmentRange(from: 6, limits: limits) == 6..<1_506)
    }

    /// Acknowledged offsets map back to source positions: inside a verbatim piece exactly,
    /// inside records made from a source range at their start, and per source.
    @Test func acknowledgementsMapBackToSourcePositions() throws {
        let buffer = ReplayBuffer(capacity: 1024, records: .lines, tracksSources: true)
        let a = SourceID(device: 1, inode: 1)
        let b = SourceID(device: 1, inode: 2)
        func write(_ count: Int, _ mark: SourceMark) throws {
            let outcome = try buffer.withWritableSpace(maxLength: count, mark: mark) { space in
                for index in space.indices { space[index] = 0x0A }
                return space.count
            }
            #expect(outcome == count)
        }
        try write(100, .verbatim(a, from: 1000))  // stream 0..<100
        try write(40, SourceMark(source: b, start: 0, end: 25))  // 100..<140: records from b's 0..<25
        try write(60, .verbatim(a, from: 1100))  // 140..<200
        #expect(buffer.acknowledge(upTo: 50) == [a: 1050])
        #expect(buffer.acknowledge(upTo: 120) == [a: 1100, b: 0])
        #expect(buffer.acknowledge(upTo: 170) == [b: 25, a: 1130])
        #expect(buffer.acknowledge(upTo: 200) == [a: 1160])
    }
}

/// Several segments in flight at once: the next segment is cut from the end of the one still
/// waiting for its answer, and the buffer acknowledges the contiguous prefix as answers come.
@Suite struct ReplayBufferInFlightTests {
    /// Three segments cut one after another without an acknowledgement between them; the third
    /// waits above the acknowledged offset for its record, and a full buffer of segments in
    /// flight does not end it empty.
    @Test func segmentsAreCutFromTheEndOfThoseInFlight() async throws {
        let buffer = ReplayBuffer(capacity: 10, records: .lines)
        let writer = StreamWriter(buffer: buffer)
        try await writer.write(Array("aaaa\nbbbb\n".utf8))
        let limits = SegmentLimits(maxBytes: 5, maxDuration: .seconds(60))
        let first = try await buffer.cutSegment(from: 0, limits: limits)
        let second = try await buffer.cutSegment(from: first.upperBound, limits: limits)
        #expect(first == 0..<5 && second == 5..<10)
        // Given: the buffer is full of the two segments in flight; a third cut waits at 10.
        let third = Task { try await buffer.cutSegment(from: second.upperBound, limits: limits) }
        try #require(await eventually { buffer.withState { $0.readableWaitOffsets } == [10] })
        #expect(buffer.acknowledgedOffset == 0)
        // When: the answers come, the writer adds records, and the third takes what fits.
        buffer.acknowledge(upTo: first.upperBound)
        try await writer.write(Array("cc\n".utf8))
        buffer.acknowledge(upTo: second.upperBound)
        try await writer.write(Array("dd\n".utf8))
        // The third segment's first record is in; the next would pass its size limit.
        #expect(try await third.value == 10..<13)
        var bytes: [UInt8] = []
        try buffer.copy(10..<13) { bytes += $0 }
        #expect(bytes == Array("cc\n".utf8))
    }

    /// Readers waiting from different offsets with deadlines share one timer on the upload's
    /// clock; each wakes at its own deadline.
    @Test func deadlinesShareOneTimerOnTheClock() async throws {
        let clock = ManualClock()
        let buffer = ReplayBuffer(storage: MemoryReplayStorage(capacity: 64), records: .lines, maxRecord: 64, clock: UploadClock(clock))
        let start = buffer.clock.now
        let soon = Task { await buffer.waitUntilReadable(from: 0, until: start.advanced(by: .seconds(1))) }
        let later = Task { await buffer.waitUntilReadable(from: 5, until: start.advanced(by: .seconds(2))) }
        try #require(await eventually { buffer.withState { $0.readableWaitOffsets.count } == 2 && clock.sleeperCount >= 1 })
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        await soon.value
        #expect(buffer.withState { $0.readableWaitOffsets } == [5])
        try #require(await eventually { clock.sleeperCount == 1 })
        clock.advance(by: .seconds(1))
        await later.value
        #expect(buffer.withState { $0.waiters.isEmpty })
    }
}
