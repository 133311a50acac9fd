import Testing

@testable import StreamUp

/// The buffer's state machine on its own: events in, actions out, no threads. Waiters are
/// named by strings; what the log asks to wake is checked by name.
@Suite struct ReplayLogTests {
    typealias Log = ReplayLog<String>

    /// The bytes of `text`, filled at the written offset with their record ends found as the
    /// buffer's writer finds them, their commit begun. Nil when the log gave no space.
    func fill(_ text: String, in log: inout Log, maxRecord: Int = 1_000) -> Log.Filled? {
        guard case .space(let offset, let free, let boundary) = log.reserve(now: .now), free >= text.utf8.count, log.beginCommit() else { return nil }
        let bytes = Array(text.utf8)
        let found =
            log.records == .lines
            ? bytes.withUnsafeBytes { ReplayBuffer.boundaries(in: $0, at: offset, after: boundary, maxRecord: maxRecord) }
            : (boundary: offset + bytes.count, splits: [])
        return Log.Filled(
            space: UnsafeMutableRawBufferPointer(start: nil, count: 0), count: bytes.count, offset: offset, mark: nil, boundary: found.boundary,
            splits: found.splits, lines: 0, time: .now)
    }

    /// Commits `text` at the written offset.
    @discardableResult
    func write(_ text: String, to log: inout Log, maxRecord: Int = 1_000) throws -> Log.Actions {
        log.committed(try #require(fill(text, in: &log, maxRecord: maxRecord)))
    }

    func names(_ actions: Log.Actions) -> [String] { actions.wake.map(\.wake) }

    func at(_ seconds: Int) -> UploadClock.Instant { UploadClock.Instant(elapsed: .seconds(seconds)) }

    /// Segments in flight at once: each reader waits past its own offset above the acknowledged
    /// one, and a record wakes only the readers it is past.
    @Test func readersOfDisjointRangesWakeOnlyForRecordsPastTheirOffset() throws {
        var log = Log(capacity: 100, records: .lines)
        try write("aaaa\nbbbb\n", to: &log)
        // Given: segments 0..<5 and 5..<10 in flight, a third cut waits at 10, a fourth at 20.
        _ = log.wait(log.newWaiterID(), for: .readable(from: 10, start: 10, deadline: nil), wake: "third")
        _ = log.wait(log.newWaiterID(), for: .readable(from: 20, start: 20, deadline: nil), wake: "fourth")
        #expect(log.readableWaitOffsets == [10, 20])
        // When: a partial record, then its end.
        #expect(names(try write("cc", to: &log)).isEmpty)
        #expect(names(try write("c\n", to: &log)) == ["third"])
        #expect(log.readableWaitOffsets == [20])
        // Acknowledging the contiguous prefix wakes no reader.
        let (_, actions) = log.acknowledge(upTo: 5)
        #expect(names(actions).isEmpty && log.acknowledged == 5)
    }

    /// A full buffer ends a segment that holds a record (its acknowledgement frees room), but
    /// does not wake a cut from the end of the segments in flight, which has nothing to take
    /// until an acknowledgement lets more be written.
    @Test func aFullBufferWakesOnlyACutThatHoldsARecord() throws {
        var log = Log(capacity: 10, records: .lines)
        try write("aaaa\n", to: &log)
        _ = log.wait(log.newWaiterID(), for: .readable(from: 9, start: 0, deadline: nil), wake: "holds a record")
        _ = log.wait(log.newWaiterID(), for: .readable(from: 10, start: 10, deadline: nil), wake: "after the rest")
        #expect(names(try write("bbbb\n", to: &log)) == ["holds a record"])
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
        let written = try write("x\n", to: &log)
        #expect(names(written) == ["five"] && written.timer?.deadline == nil)
        // A wait whose deadline has passed ends at once.
        #expect(names(log.wait(log.newWaiterID(), for: .readable(from: 2, start: 2, deadline: at(1)), wake: "late", now: at(2))) == ["late"])
    }

    /// Writers take turns: the holder waits for space keeping its turn, an acknowledgement
    /// grants it, and the next writer gets the turn when the holder leaves.
    @Test func writersWaitInLineForSpaceAndTurn() throws {
        var log = Log(capacity: 10, records: .rawBytes)
        #expect(log.arrive(1, needs: 10, patience: .waits, quick: false, now: .now) == .granted)
        try write("0123456789", to: &log)
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
    @Test func aFailureWakesEveryWaiter() throws {
        var log = Log(capacity: 4, records: .rawBytes)
        #expect(log.arrive(1, needs: 4, patience: .waits, quick: false, now: .now) == .granted)
        try write("abcd", to: &log)
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
    @Test func aCancelledThreadWriterWaitsNoMore() throws {
        var log = Log(capacity: 1, records: .rawBytes)
        #expect(log.arrive(1, needs: 1, patience: .waits, quick: false, now: .now) == .granted)
        try write("a", to: &log)
        _ = log.enterLine(1, needs: 1, patience: .waits, holding: true, wake: "parked")
        #expect(log.cancelWriter(1, forever: true).wake.map(\.wakeup) == [.cancelled])
        #expect(log.enterLine(1, needs: 1, patience: .waits, holding: true, wake: "again").wake.map(\.wakeup) == [.cancelled])
        #expect(log.waiters.isEmpty)
    }

    /// An acknowledgement never passes the last record end, nor goes back.
    @Test func acknowledgementsStayWithinTheRecords() throws {
        var log = Log(capacity: 100, records: .lines)
        try write("ab\ncd", to: &log)
        #expect(log.acknowledgement(upTo: 5) == (3, 5))
        _ = log.acknowledge(upTo: 3)
        #expect(log.acknowledgement(upTo: 1) == (3, 5))
    }
}

/// Where the input stands, from open to ended, as a pure machine: its own end, the three
/// kinds of stop, bytes held for room on a full disk, and a failure beside them.
@Suite struct ReplayLogLifecycleTests {
    typealias Log = ReplayLog<String>
    let machine = ReplayLogTests()

    /// The input's own end makes the last partial record a record, tells the storage where it
    /// ended, and wakes the readers; nothing more is written.
    @Test func theInputsOwnEndMakesTheLastPartialRecordARecord() throws {
        var log = Log(capacity: 100, records: .lines)
        try machine.write("one\ntw", to: &log)
        _ = log.wait(log.newWaiterID(), for: .readable(from: 4, start: 4, deadline: nil), wake: "reader")
        let ended = log.finish(stopped: false)
        #expect(ended.inputEndedAt == 6 && machine.names(ended) == ["reader"] && !ended.endsStop)
        #expect(log.input == .ended(.reached) && log.inputReachedEnd && log.boundary == 6)
        guard case .closed(let error, _) = log.reserve(now: .now) else {
            Issue.record("a write after the end was reserved space")
            return
        }
        #expect(error.code == .bodyStreamClosed)
    }

    /// A stop in lines mode takes the unfinished record out and says so before readers see the
    /// end: the reader waits on while the input is stopping, writes are refused, and the end
    /// comes with the report.
    @Test func aStopSaysWhatItDroppedBeforeReadersSeeTheEnd() throws {
        var log = Log(capacity: 100, records: .lines)
        try machine.write("whole\npart", to: &log)
        _ = log.wait(log.newWaiterID(), for: .readable(from: 6, start: 6, deadline: nil), wake: "reader")
        let stop = log.finish(stopped: true)
        #expect(stop.dropped == 6..<10 && stop.endsStop && stop.inputEndedAt == nil)
        #expect(machine.names(stop).isEmpty && log.input == .stopping(.dropped) && !log.inputEnded && log.isFinished)
        #expect(log.written == 6 && log.boundary == 6)
        guard case .closed = log.reserve(now: .now) else {
            Issue.record("a write while the stop is said was reserved space")
            return
        }
        let said = log.stopReported()
        #expect(machine.names(said) == ["reader"] && log.input == .ended(.stopped(.dropped)) && log.inputEnded)
        // A second finish (the producer returning after the stop) changes nothing.
        let again = log.finish(stopped: false)
        #expect(again.inputEndedAt == nil && log.input == .ended(.stopped(.dropped)) && log.written == 6)
    }

    /// A stop keeps what was read when the bytes are not lines, or when source positions are
    /// saved: the unfinished record becomes a record, nothing needs saying, and a read under
    /// way at the stop still goes in.
    @Test func aStopKeepsWhatWasReadForRawBytesAndSavedPositions() throws {
        for (records, tracksSources) in [(RecordMode.rawBytes, false), (.lines, true)] {
            var log = Log(capacity: 100, records: records, tracksSources: tracksSources)
            try machine.write("one\ntw", to: &log)
            let late = try #require(machine.fill("o\n", in: &log))
            let stop = log.finish(stopped: true)
            #expect(stop.dropped == nil && !stop.endsStop && log.input == .ended(.stopped(.keeps)) && log.boundary == 6)
            _ = log.committed(late)
            #expect(log.written == 8 && log.boundary == 8)
        }
    }

    /// A read that was under way when a stop dropped the unfinished record is not taken: its
    /// bytes would continue a record that is no longer there.
    @Test func aReadUnderWayAtADroppingStopIsNotTaken() throws {
        var log = Log(capacity: 100, records: .lines)
        try machine.write("whole\npa", to: &log)
        // The holder is reading (its space reserved) when the stop comes.
        guard case .space = log.reserve(now: .now) else {
            Issue.record("no space reserved")
            return
        }
        let stop = log.finish(stopped: true)
        #expect(stop.dropped == 6..<8)
        _ = log.stopReported()
        let committing = log.beginCommit()
        #expect(!committing && log.written == 6)
    }

    /// A stop during a commit drops the unfinished record when that write is counted, and the
    /// end is not the input's own (the storage is not told).
    @Test func aStopDuringACommitDropsTheUnfinishedRecordAfterIt() throws {
        var log = Log(capacity: 100, records: .lines)
        try machine.write("whole\n", to: &log)
        let part = try #require(machine.fill("part", in: &log))
        // The stop comes while the bytes are being committed.
        let stop = log.finish(stopped: true)
        #expect(stop.dropped == nil && !stop.endsStop && stop.inputEndedAt == nil)
        #expect(log.input == .ended(.stopped(.dropsAfterWrite)) && log.inputEnded)
        let committed = log.committed(part)
        #expect(committed.dropped == 6..<10 && log.written == 6 && log.input == .ended(.stopped(.dropped)))
        // A read after the stop is not taken.
        let committing = log.beginCommit()
        #expect(!committing)
    }

    /// Bytes the storage had no room for wait with their writer until the retry instant or an
    /// acknowledgement past the one then, and are committed again, whole.
    @Test func heldBytesWaitForRoomAndAreCommittedAgain() throws {
        var log = Log(capacity: 100, records: .lines)
        try machine.write("first\n", to: &log)
        let bytes = try #require(machine.fill("second\n", in: &log))
        log.holdForRoom(bytes, retryAt: at(5))
        #expect(log.heldWait == .storageRoom(acknowledged: 0, retryAt: at(5)))
        let id = log.newWaiterID()
        #expect(machine.names(log.wait(id, for: .storageRoom(acknowledged: 0, retryAt: at(5)), wake: "holder", now: at(1))).isEmpty)
        // An acknowledgement may have freed room on the storage: the holder tries at once.
        #expect(machine.names(log.acknowledge(upTo: 6).actions) == ["holder"])
        guard case .held(let again) = log.reserve(now: .now) else {
            Issue.record("the held bytes were not handed back")
            return
        }
        _ = log.committed(again)
        #expect(log.written == 13 && log.boundary == 13 && log.heldWait == nil)
    }

    /// A stop drops bytes held for room and says so once, before its end; the holder, woken by
    /// the end, drops them without a second word, and with them the unfinished record.
    @Test func aStopSaysHeldBytesOnceAndTheHolderDropsThemWithoutAWord() throws {
        var log = Log(capacity: 100, records: .lines)
        try machine.write("whole\npa", to: &log)
        let bytes = try #require(machine.fill("rt", in: &log))
        log.holdForRoom(bytes, retryAt: at(5))
        _ = log.wait(log.newWaiterID(), for: .storageRoom(acknowledged: 0, retryAt: at(5)), wake: "holder", now: at(1))
        let stop = log.finish(stopped: true)
        #expect(stop.heldDropped == 2 && stop.dropped == nil && stop.endsStop && log.input == .stopping(.dropsAfterWrite))
        #expect(machine.names(log.stopReported()) == ["holder"])
        guard case .closed(_, let dropped) = log.reserve(now: .now) else {
            Issue.record("the holder was given its bytes after the stop")
            return
        }
        #expect(dropped.heldDropped == nil && dropped.dropped == 6..<8 && log.written == 6 && log.input == .ended(.stopped(.dropped)))
    }

    /// A writer that leaves its turn with bytes held (cancelled) drops them and says how many;
    /// one that must not wait takes them back without a word.
    @Test func heldBytesLeftBehindAreSaidAndGivenBackOnesAreNot() throws {
        var log = Log(capacity: 100, records: .rawBytes)
        #expect(log.arrive(1, needs: 1, patience: .waits, quick: false, now: .now) == .granted)
        log.holdForRoom(try #require(machine.fill("abc", in: &log)), retryAt: at(5))
        #expect(log.leaveTurn(1).heldDropped == 3 && log.heldWait == nil && log.writers.holder == nil)
        log.holdForRoom(try #require(machine.fill("abc", in: &log)), retryAt: at(5))
        #expect(log.giveBack().heldDropped == nil && log.heldWait == nil && log.written == 0)
    }

    /// A failure leaves where the input stands as it was: the input's own end after it still
    /// tells the storage where the input ended, and every write meets the failure.
    @Test func aFailureKeepsWhereTheInputStands() throws {
        var log = Log(capacity: 100, records: .lines)
        try machine.write("one\n", to: &log)
        _ = log.fail(StreamUpError(.io, "the disk failed"))
        #expect(log.input == .open && log.isClosed)
        let ended = log.finish(stopped: false)
        #expect(ended.inputEndedAt == 4 && log.input == .ended(.reached) && log.failure?.code == .io)
        guard case .closed(let error, _) = log.reserve(now: .now) else {
            Issue.record("a failed log reserved space")
            return
        }
        #expect(error.code == .io)
    }

    /// A finish after a kept stop makes what was written since a record, and a read that was
    /// under way at the finish never moves the last record end back.
    @Test func aReadUnderWayAtTheEndNeverMovesTheLastRecordEndBack() throws {
        var log = Log(capacity: 100, records: .lines, tracksSources: true)
        try machine.write("one\ntw", to: &log)
        let late = try #require(machine.fill("o", in: &log))
        _ = log.finish(stopped: true)
        #expect(log.boundary == 6)
        // The late bytes hold no newline: their own last record end is the one before them.
        _ = log.committed(late)
        #expect(log.boundary == 6 && log.written == 7)
        _ = log.finish(stopped: false)
        #expect(log.boundary == 7 && log.input == .ended(.stopped(.keeps)))
    }

    func at(_ seconds: Int) -> UploadClock.Instant { machine.at(seconds) }
}
