import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// The heartbeat's schedule on a ``ManualClock``: beats fall at start + k × interval, skipped
/// beats are counted, and a stop wakes the waiting beat at once, all without real time
/// passing. Every step waits until the producer is asleep on the clock before moving it.
@Suite(.timeLimit(.minutes(1))) struct HeartbeatProducerTests {
    /// One beat at the start, none before the interval has passed, one as it passes; a clock
    /// moved past two ticks at once writes both (the schedule does not drift), and the
    /// producer ends after `count` beats.
    @Test func beatsFollowTheClockAndDoNotDrift() async throws {
        let clock = ManualClock()
        let beats = BeatReader(bufferSize: 64 * 1024)
        let producer = HeartbeatProducer(every: .seconds(10), count: 4, clock: clock)
        let running = Task { try await producer.produce(into: beats.writer) }

        // Given the first beat written and the producer asleep until the first tick.
        try await waitUntil { beats.records().count == 1 && clock.sleeperCount == 1 }
        // When the clock stops short of the tick, the producer still sleeps and nothing is written.
        clock.advance(by: .seconds(9))
        #expect(clock.sleeperCount == 1 && beats.records().count == 1)
        // When it reaches the tick, the second beat goes out.
        clock.advance(by: .seconds(1))
        try await waitUntil { beats.records().count == 2 && clock.sleeperCount == 1 }
        // When it jumps past two more ticks (20 s and 30 s) at once, both beats go out and the
        // producer ends: count 4 reached.
        clock.advance(by: .seconds(25))
        try await running.value

        let records = beats.records()
        #expect(records.map { $0["seq"] as? Int } == [1, 2, 3, 4])
        #expect(records.map { $0["skipped"] as? Int } == [0, 0, 0, 0])
        #expect(clock.sleeperCount == 0)
    }

    /// With no room in the buffer, beats are skipped rather than queued; the next record that
    /// fits says how many were skipped and `seq` has no gaps.
    @Test func beatsWithNoRoomAreSkippedAndCounted() async throws {
        let clock = ManualClock()
        let beats = BeatReader(bufferSize: 256)  // room for one record of about 200 bytes
        let producer = HeartbeatProducer(
            every: .seconds(1), count: 5, fields: [("pad", String(repeating: "p", count: 60))], clock: clock)
        let running = Task { try await producer.produce(into: beats.writer) }

        // Given the first beat in the buffer and nobody reading it.
        try await waitUntil { beats.bufferedCount > 0 && clock.sleeperCount == 1 }
        // When three ticks pass, one at a time, each beat finds the buffer full.
        for _ in 0..<3 {
            clock.advance(by: .seconds(1))
            try await waitUntil { clock.sleeperCount == 1 }
        }
        // Then, once the buffer is read, the fifth beat says three were skipped.
        #expect(beats.records().count == 1)
        clock.advance(by: .seconds(1))
        try await running.value

        let records = beats.records()
        #expect(records.map { $0["seq"] as? Int } == [1, 2])
        #expect(records.map { $0["skipped"] as? Int } == [0, 3])
    }

    /// A stop while the producer sleeps wakes it at once, with the clock standing still: it
    /// writes one final record with the given fields and returns.
    @Test func stopWakesTheWaitingBeatWithoutTimePassing() async throws {
        let clock = ManualClock()
        let beats = BeatReader(bufferSize: 64 * 1024)
        let stop = HeartbeatStop()
        let producer = HeartbeatProducer(every: .seconds(3600), stop: stop, clock: clock)
        let running = Task { try await producer.produce(into: beats.writer) }

        try await waitUntil { beats.records().count == 1 && clock.sleeperCount == 1 }
        stop.stop(final: [("event", .string("stop")), ("status", .int(0))])
        try await running.value

        let records = beats.records()
        #expect(records.count == 2)
        #expect(records.last?["event"] as? String == "stop" && records.last?["status"] as? Int == 0)
        #expect(clock.now == ManualClock.Instant(offset: .zero))
        #expect(clock.sleeperCount == 0)
    }
}

/// A live buffer a heartbeat writes into, read back by the test without blocking.
///
/// Thread safety: `records()` and the writer are used from the test's tasks; the buffer is
/// internally locked.
private final class BeatReader: @unchecked Sendable {
    private let buffer: ReplayBuffer
    let writer: StreamWriter
    private var received: [UInt8] = []

    init(bufferSize: Int) {
        buffer = .live(capacity: bufferSize)
        writer = StreamWriter(buffer: buffer)
    }

    /// Bytes written and not yet read.
    var bufferedCount: Int { buffer.heldCount }

    /// Reads what is buffered (never waits), then returns every whole record so far.
    func records() -> [[String: Any]] {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while case .bytes(let count) = (try? chunk.withUnsafeMutableBytes { try buffer.readLive(into: $0, blocking: false) }) ?? .end {
            received += chunk[..<count]
        }
        return received.split(separator: UInt8(ascii: "\n")).compactMap {
            try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any]
        }
    }
}
