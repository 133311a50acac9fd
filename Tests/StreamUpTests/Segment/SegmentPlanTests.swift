import StreamUpTestSupport
import Testing

@testable import StreamUp

/// The segment-cutting rules on a manual clock, with no buffer and no sockets: where a request
/// may end given what is written and when.
@Suite struct SegmentPlanTests {
    typealias Plan = SegmentPlan<ManualClock.Instant>
    let clock = ManualClock()

    private func plan(start: Int = 0, maxBytes: Int, seconds: Int = 1) -> Plan {
        Plan(start: start, limits: SegmentLimits(maxBytes: maxBytes, maxDuration: .seconds(seconds)))
    }

    private func available(_ boundary: Int, ended: Bool = false, full: Bool = false) -> Plan.Available {
        Plan.Available(boundary: boundary, inputEnded: ended, bufferFull: full)
    }

    /// The size limit ends a segment at the last line boundary within it, never mid-line.
    @Test func sizeEndsAtTheLastLineWithinTheLimit() {
        let lines = Lines("aaaa\nbbbb\ncccc\n")
        var plan = plan(maxBytes: 12)
        #expect(plan.decide(at: 0, available(15), now: clock.now, boundaries: lines) == .send(upTo: 10))
        #expect(plan.decide(at: 10, available(15), now: clock.now, boundaries: lines) == .end(reachedInputEnd: false))
    }

    /// Bytes are handed out in pieces up to the committed boundary, whatever the reader's size.
    @Test func piecesUpToTheCommittedBoundaryKeepGoing() {
        let lines = Lines("aaaa\nbbbb\n")
        var plan = plan(maxBytes: 100)
        #expect(plan.decide(at: 0, available(10), now: clock.now, boundaries: lines) == .send(upTo: 10))
        #expect(plan.decide(at: 3, available(10), now: clock.now, boundaries: lines) == .send(upTo: 10))
    }

    /// A first record longer than the segment goes whole, in a segment of its own.
    @Test func aFirstRecordLongerThanTheSegmentGoesWholeAlone() {
        let lines = Lines("xxxxxxxxxx\nyy\n")
        var plan = plan(maxBytes: 4)
        #expect(plan.decide(at: 0, available(14), now: clock.now, boundaries: lines) == .send(upTo: 11))
        #expect(plan.decide(at: 11, available(14), now: clock.now, boundaries: lines) == .end(reachedInputEnd: false))
    }

    /// With nothing whole to send, the plan waits without a deadline: a quiet stream holds no
    /// request open, and the time limit starts at the first byte.
    @Test func waitsWithoutDeadlineUntilTheFirstRecord() {
        var plan = plan(maxBytes: 100)
        #expect(plan.decide(at: 0, available(0), now: clock.now, boundaries: Lines("partial")) == .wait(until: nil))
        #expect(plan.firstByteAt == nil)
    }

    /// The time limit counts from the first byte and ends the segment at the next boundary: a
    /// record still being written stays for the next segment.
    @Test func timeEndsTheSegmentAtTheNextBoundary() {
        let lines = Lines("one\ntwo\nthr")
        var plan = plan(maxBytes: 100, seconds: 1)
        let started = clock.now
        #expect(plan.decide(at: 0, available(4), now: clock.now, boundaries: lines) == .send(upTo: 4))
        // Then a partial record arrives; the segment waits for it until its deadline.
        #expect(plan.decide(at: 4, available(4), now: clock.now, boundaries: lines) == .wait(until: started.advanced(by: .seconds(1))))
        clock.advance(by: .milliseconds(400))
        #expect(plan.decide(at: 4, available(8), now: clock.now, boundaries: lines) == .send(upTo: 8))
        clock.advance(by: .milliseconds(700))
        #expect(plan.decide(at: 8, available(8), now: clock.now, boundaries: lines) == .end(reachedInputEnd: false))
    }

    /// Once a segment has started, its reader sleeps until the segment could be full
    /// (``SegmentPlan/wakeOffset(at:)``) or its deadline: the records written meanwhile, whole
    /// at the deadline, all go in this segment, and only then does it end.
    @Test func recordsSleptThroughGoInTheSegmentAtItsDeadline() {
        let lines = Lines("one\ntwo\nthree\nfo")
        var plan = plan(maxBytes: 100, seconds: 1)
        #expect(plan.wakeOffset(at: 0) == 0)
        #expect(plan.decide(at: 0, available(4), now: clock.now, boundaries: lines) == .send(upTo: 4))
        #expect(plan.wakeOffset(at: 4) == 99)
        clock.advance(by: .seconds(1))
        #expect(plan.decide(at: 4, available(14), now: clock.now, boundaries: lines) == .send(upTo: 14))
        #expect(plan.decide(at: 14, available(14), now: clock.now, boundaries: lines) == .end(reachedInputEnd: false))
    }

    /// With a record limit every record is counted as it comes: the reader wakes for each.
    @Test func aRecordLimitWakesTheReaderForEachRecord() {
        let lines = Lines("one\ntwo\n")
        var plan = Plan(start: 0, limits: SegmentLimits(maxBytes: 100, maxDuration: .seconds(1), maxRecords: 5))
        #expect(plan.decide(at: 0, available(4), now: clock.now, boundaries: lines) == .send(upTo: 4))
        #expect(plan.wakeOffset(at: 4) == 4)
    }

    /// The end of the input ends the segment once everything is handed out, and says so.
    @Test func theEndOfTheInputEndsTheSegment() {
        let lines = Lines("last line, no newline")
        var plan = plan(maxBytes: 100)
        #expect(plan.decide(at: 0, available(21, ended: true), now: clock.now, boundaries: lines) == .send(upTo: 21))
        #expect(plan.decide(at: 21, available(21, ended: true), now: clock.now, boundaries: lines) == .end(reachedInputEnd: true))
    }

    /// A full buffer ends the segment at its boundary, so an acknowledgement frees room instead
    /// of the request waiting out its deadline while the producer waits for room.
    @Test func aFullBufferEndsTheSegmentAtABoundary() {
        let lines = Lines("aaaa\nbb")
        var plan = plan(maxBytes: 100)
        #expect(plan.decide(at: 0, available(5, full: true), now: clock.now, boundaries: lines) == .send(upTo: 5))
        #expect(plan.decide(at: 5, available(5, full: true), now: clock.now, boundaries: lines) == .end(reachedInputEnd: false))
    }

    /// Opaque bytes (`--records none`) end exactly at the size limit.
    @Test func rawBytesEndExactlyAtTheLimit() {
        var plan = plan(maxBytes: 7)
        let raw = RawBytes()
        #expect(plan.decide(at: 0, available(20), now: clock.now, boundaries: raw) == .send(upTo: 7))
        #expect(plan.decide(at: 7, available(20), now: clock.now, boundaries: raw) == .end(reachedInputEnd: false))
    }

    /// With a record limit, the segment ends after that many records, whatever their size.
    @Test func aRecordLimitEndsTheSegment() {
        let lines = Lines("a\nb\nc\nd\ne\n")
        var plan = Plan(start: 0, limits: SegmentLimits(maxBytes: 100, maxDuration: .seconds(1), maxRecords: 3))
        #expect(plan.decide(at: 0, available(10), now: clock.now, boundaries: lines) == .send(upTo: 6))
        #expect(plan.decide(at: 6, available(10), now: clock.now, boundaries: lines) == .end(reachedInputEnd: false))
        var trickle = Plan(start: 0, limits: SegmentLimits(maxBytes: 100, maxDuration: .seconds(1), maxRecords: 3))
        #expect(trickle.decide(at: 0, available(4), now: clock.now, boundaries: lines) == .send(upTo: 4))
        #expect(trickle.decide(at: 4, available(10), now: clock.now, boundaries: lines) == .send(upTo: 6))
        #expect(trickle.decide(at: 6, available(10), now: clock.now, boundaries: lines) == .end(reachedInputEnd: false))
    }

    /// A segment that starts later (after acknowledged bytes) counts its size from its start.
    @Test func limitsCountFromTheSegmentStart() {
        let lines = Lines("aaaa\nbbbb\ncccc\ndddd\n")
        var plan = plan(start: 5, maxBytes: 11)
        #expect(plan.decide(at: 5, available(20), now: clock.now, boundaries: lines) == .send(upTo: 15))
        #expect(plan.decide(at: 15, available(20), now: clock.now, boundaries: lines) == .end(reachedInputEnd: false))
    }
}

/// Line boundaries of a fixed text, for the plan.
private struct Lines: RecordBoundaryFinder {
    let bytes: [UInt8]
    init(_ text: String) { bytes = Array(text.utf8) }

    func lastBoundary(after offset: Int, atOrBefore limit: Int) -> Int? {
        guard limit > offset else { return nil }
        return bytes[offset..<min(limit, bytes.count)].lastIndex(of: 0x0A).map { $0 + 1 }
    }

    func firstBoundary(after offset: Int) -> Int {
        bytes[offset...].firstIndex(of: 0x0A).map { $0 + 1 } ?? bytes.count
    }

    func boundary(after offset: Int, records: Int, atOrBefore limit: Int) -> (boundary: Int, records: Int) {
        var found = 0
        for index in offset..<min(limit, bytes.count) where bytes[index] == 0x0A {
            found += 1
            if found == records { return (index + 1, found) }
        }
        return (limit, found)
    }
}

/// Every offset is a boundary.
private struct RawBytes: RecordBoundaryFinder {
    func lastBoundary(after offset: Int, atOrBefore limit: Int) -> Int? { limit > offset ? limit : nil }
    func firstBoundary(after offset: Int) -> Int { offset + 1 }
    func boundary(after offset: Int, records: Int, atOrBefore limit: Int) -> (boundary: Int, records: Int) {
        (min(limit, offset + records), min(limit - offset, records))
    }
}
