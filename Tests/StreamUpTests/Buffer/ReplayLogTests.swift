import Testing

@testable import StreamUp

/// The buffer's state machine on its own: events in, actions out, no threads. Waiters are
/// named by strings; what the log asks to wake is checked by name.
@Suite struct ReplayLogTests {
    typealias Log = ReplayLog<String>

    /// Commits `text` at the written offset, finding its record ends as the buffer's writer does.
    @discardableResult
    func write(_ text: String, to log: inout Log, maxRecord: Int = 1_000) -> Log.Actions {
        let bytes = Array(text.utf8)
        let (offset, _, boundary) = try! log.reserve(now: .now)  // a test log never fails here
        let committing = log.beginCommit()
        #expect(committing)
        let found =
            log.records == .lines
            ? bytes.withUnsafeBytes { ReplayBuffer.boundaries(in: $0, at: offset, after: boundary, maxRecord: maxRecord) }
            : (boundary: offset + bytes.count, splits: [])
        return log.committed(
            count: bytes.count, at: offset, boundary: found.boundary, splits: found.splits, lines: 0, now: .now, mark: nil)
    }

    func names(_ actions: Log.Actions) -> [String] { actions.wake.map(\.wake) }

    func at(_ seconds: Int) -> UploadClock.Instant { UploadClock.Instant(elapsed: .seconds(seconds)) }

    /// Segments in flight at once: each reader waits past its own offset above the acknowledged
    /// one, and a record wakes only the readers it is past.
    @Test func readersOfDisjointRangesWakeOnlyForRecordsPastTheirOffset() {
        var log = Log(capacity: 100, records: .lines)
        write("aaaa\nbbbb\n", to: &log)
        // Given: segments 0..<5 and 5..<10 in flight, a third cut waits at 10, a fourth at 20.
        _ = log.wait(log.newWaiterID(), for: .readable(from: 10, start: 10, deadline: nil), wake: "third")
        _ = log.wait(log.newWaiterID(), for: .readable(from: 20, start: 20, deadline: nil), wake: "fourth")
        #expect(log.readableWaitOffsets == [10, 20])
        // When: a partial record, then its end.
        #expect(names(write("cc", to: &log)).isEmpty)
        #expect(names(write("c\n", to: &log)) == ["third"])
        #expect(log.readableWaitOffsets == [20])
        // Acknowledging the contiguous prefix wakes no reader.
        let (_, actions) = log.acknowledge(upTo: 5)
        #expect(names(actions).isEmpty && log.acknowledged == 5)
    }

    /// A full buffer ends a segment that holds a record (its acknowledgement frees room), but
    /// does not wake a cut from the end of the segments in flight, which has nothing to take
    /// until an acknowledgement lets more be written.
    @Test func aFullBufferWakesOnlyACutThatHoldsARecord() {
        var log = Log(capacity: 10, records: .lines)
        write("aaaa\n", to: &log)
        _ = log.wait(log.newWaiterID(), for: .readable(from: 9, start: 0, deadline: nil), wake: "holds a record")
        _ = log.wait(log.newWaiterID(), for: .readable(from: 10, start: 10, deadline: nil), wake: "after the rest")
        #expect(names(write("bbbb\n", to: &log)) == ["holds a record"])
        #expect(log.isFull && log.readableWaitOffsets == [10])
        // A new waiter there is not woken at once either: it would only spin.
        #expect(names(log.wait(log.newWaiterID(), for: .readable(from: 10, start: 10, deadline: nil), wake: "again")).isEmpty)
    }

    /// One timer for all deadlines: it is set for the earliest, a later one changes nothing, a
    /// stale timer is ignored, and when it goes off the next deadline gets a new one.
    @Test func oneTimerServesEveryDeadline() throws {
        var log = Log(capacity: 100, records: .lines)
        let first = log.wait(log.newWaiterID(), for: .readable(from: 0, start: 0, deadline: at(2)), wake: "two", now: at(0))
        let timer = try #require(first.timer)
        #expect(timer.deadline == at(2))
        #expect(log.wait(log.newWaiterID(), for: .readable(from: 0, start: 0, deadline: at(5)), wake: "five", now: at(0)).timer == nil)
        // A stale timer does nothing.
        #expect(names(log.deadlinePassed(generation: timer.generation - 1, now: at(3))).isEmpty)
        // The timer goes off: the waiter due wakes, and a timer is set for the next deadline.
        let fired = log.deadlinePassed(generation: timer.generation, now: at(2))
        #expect(names(fired) == ["two"] && fired.timer?.deadline == at(5))
        // A record wakes the last waiter; no deadline is left, so no timer.
        let written = write("x\n", to: &log)
        #expect(names(written) == ["five"] && written.timer?.deadline == nil)
        // A wait whose deadline has passed ends at once.
        #expect(names(log.wait(log.newWaiterID(), for: .readable(from: 2, start: 2, deadline: at(1)), wake: "late", now: at(2))) == ["late"])
    }

    /// Writers take turns: the holder waits for space keeping its turn, an acknowledgement
    /// grants it, and the next writer gets the turn when the holder leaves.
    @Test func writersWaitInLineForSpaceAndTurn() {
        var log = Log(capacity: 10, records: .rawBytes)
        #expect(log.arrive(1, needs: 10, patience: .waits, quick: false, now: .now) == .granted)
        write("0123456789", to: &log)
        #expect(names(log.enterLine(1, needs: 4, patience: .waits, holding: true, wake: "holder")).isEmpty)
        #expect(log.arrive(2, needs: 1, patience: .waits, quick: false, now: .now) == .queued)
        #expect(names(log.enterLine(2, needs: 1, patience: .waits, holding: false, wake: "next")).isEmpty)
        #expect(log.pauses == 1)
        let (_, freed) = log.acknowledge(upTo: 6)
        #expect(freed.wake.map(\.wakeup) == [.turn(.granted)] && names(freed) == ["holder"])
        #expect(freed.wake.count == 1)
        #expect(log.leaveTurn(1).wake.map(\.wakeup) == [.turn(.granted)])
    }

    /// A failure ends every wait: writers in line are closed, readers and acknowledgement
    /// waiters wake.
    @Test func aFailureWakesEveryWaiter() {
        var log = Log(capacity: 4, records: .rawBytes)
        #expect(log.arrive(1, needs: 4, patience: .waits, quick: false, now: .now) == .granted)
        write("abcd", to: &log)
        _ = log.enterLine(1, needs: 1, patience: .waits, holding: true, wake: "writer")
        _ = log.wait(log.newWaiterID(), for: .acknowledged(upTo: 4), wake: "acknowledged")
        _ = log.wait(log.newWaiterID(), for: .readable(from: 4, start: 4, deadline: nil), wake: "reader")
        let actions = log.fail(StreamUpError(.cancelled, "cancelled"))
        #expect(Set(names(actions)) == ["writer", "acknowledged", "reader"])
        #expect(actions.wake.first { $0.wake == "writer" }?.wakeup == .turn(.closed))
        #expect(log.waiters.isEmpty && log.writers.entries.isEmpty)
    }

    /// A thread writer whose producer was cancelled leaves the line, and every later wait of
    /// it ends at once.
    @Test func aCancelledThreadWriterWaitsNoMore() {
        var log = Log(capacity: 1, records: .rawBytes)
        #expect(log.arrive(1, needs: 1, patience: .waits, quick: false, now: .now) == .granted)
        write("a", to: &log)
        _ = log.enterLine(1, needs: 1, patience: .waits, holding: true, wake: "parked")
        #expect(log.cancelWriter(1, forever: true).wake.map(\.wakeup) == [.cancelled])
        #expect(log.enterLine(1, needs: 1, patience: .waits, holding: true, wake: "again").wake.map(\.wakeup) == [.cancelled])
        #expect(log.waiters.isEmpty)
    }

    /// A stop during a write drops the unfinished record when that write is counted, and the
    /// end is not the input's own (the storage is not told).
    @Test func aStopDuringAWriteDropsTheUnfinishedRecordAfterIt() {
        var log = Log(capacity: 100, records: .lines)
        write("whole\n", to: &log)
        let (offset, _, boundary) = try! log.reserve(now: .now)  // not failed, not ended
        let committing = log.beginCommit()
        #expect(committing)
        // The stop comes while the bytes are being committed.
        #expect(log.stopDropping(stopped: true) == nil)
        let finished = log.finish(stopped: true, dropping: nil)
        #expect(finished.inputEndedAt == nil && log.inputEnded)
        let bytes = Array("part".utf8)
        let found = bytes.withUnsafeBytes { ReplayBuffer.boundaries(in: $0, at: offset, after: boundary, maxRecord: 100) }
        let committed = log.committed(count: 4, at: offset, boundary: found.boundary, splits: [], lines: 0, now: .now, mark: nil)
        #expect(committed.dropped == 6..<10 && log.written == 6)
        // A read after the stop is not taken.
        let committingAgain = log.beginCommit()
        #expect(!committingAgain)
    }

    /// An acknowledgement never passes the last record end, nor goes back.
    @Test func acknowledgementsStayWithinTheRecords() {
        var log = Log(capacity: 100, records: .lines)
        write("ab\ncd", to: &log)
        #expect(log.acknowledgement(upTo: 5) == (3, 5))
        _ = log.acknowledge(upTo: 3)
        #expect(log.acknowledgement(upTo: 1) == (3, 5))
    }
}
