/// The window of plain segments: several requests out at once, acknowledged in stream order.
///
/// Segment N+1 is cut from the end of segment N while N waits for its answer, up to
/// ``ConcurrencyWindow/limit`` segments. A 2xx marks its segment stored; the stream is
/// acknowledged (the `.acknowledge` effect: the buffer frees, the state file and the spool
/// commit) only up to the first segment not stored, so a restart resends from there and
/// nothing acknowledged was ever past a gap. A failed segment goes out again with the same
/// cut (identical bytes, which a receiver that drops an identical insert drops), without the
/// stored segments after it. While a failing spell lasts (a failed attempt since the last
/// acknowledged progress) no new segment is cut: resends go first, one backoff for all.
///
/// The machine is the one record of where segments end: each segment keeps the cut it was last
/// sent with (``Segment/kept``), and a segment sent again from its start goes with the same cut
/// (its bytes are what the receiver may hold), unless a smaller size is asked for; a spool
/// keeps the list (``cuts``) so that the first segments after a restart are cut the same.
///
/// A segment re-planned inside the range of its earlier cut (smaller after a 413 or broken
/// connections, or the rest after a partial answer) ends by the next segment's start: it is
/// cut in pieces up to there (``Segment/bound``), and the segments after it stand.
extension DeliveryMachine {
    /// One plain segment of the window.
    struct Segment: Equatable {
        enum Phase: Equatable {
            /// Its request is out (its cut is known once `end` is set).
            case sending
            /// A 2xx came; it waits for the segments before it.
            case stored
            /// It failed: it goes out again (the same cut) once the backoff is over.
            case resend
            /// Refused for good: set aside once every segment before it is acknowledged.
            case deadLetter(carried: Range<Int>, limits: SegmentLimits, reason: String)
        }
        var from: Int
        /// Where its cut ended (nil: not known yet).
        var end: Int?
        /// A segment cut inside an earlier cut's range ends by here, where the next one starts.
        var bound: Int?
        var phase: Phase
        /// It failed before (or is the rest of one that did): until it is stored, no new
        /// segment is cut.
        var failed = false
        /// The cut it was last sent with (nil: none yet): a resend from its start carries it again.
        var kept: Range<Int>? = nil
    }

    /// How many plain requests are out now.
    var inFlight: Int { window.count { $0.phase == .sending } }

    /// Whether one exchange out is all the machine lets out now (the window's limit is one, or
    /// the resumable protocol, whose every step waits for the one before): nothing else goes
    /// out before its answer.
    var letsOneOut: Bool { configuration.resumable || concurrency.limit <= 1 }

    /// The next plain action: a dead letter at the front, the backoff, resends in stream order,
    /// then a new segment from the end of the last one while the window has room (beside
    /// requests still out, only once half a segment waits).
    mutating func nextSegment(_ input: Input) -> Action {
        if let index = window.firstIndex(where: { $0.phase == .resend }) {
            window[index].phase = .sending
            return .send(.segment(from: window[index].from, limits: limits(for: window[index])))
        }
        guard let last = window.last else {
            // An input that ends before its first byte sends nothing (an empty request is an
            // error to most receivers).
            if input.inputEnded && acknowledged >= input.end { return .finish }
            if !input.readable { return .waitForInput(from: acknowledged) }
            window.append(Segment(from: acknowledged, phase: .sending))
            return .send(.segment(from: acknowledged, limits: limits))
        }
        guard let next = last.end, window.count < concurrency.limit, !window.contains(where: { $0.failed && $0.phase != .stored }) else {
            return .awaitAnswers
        }
        if input.inputEnded && next >= input.end { return .awaitAnswers }
        guard input.isReadable(from: next) else { return .waitForInput(from: next) }
        // Beside requests still out, a segment goes only when one at a time cannot keep up:
        // half a segment's bytes wait already (or the input has ended). At a pace one request
        // at a time carries, a second one out would gain nothing and add a request waiting
        // for its answer, which costs CPU on Linux (DesignNotes, platform fact 9). Half, not a
        // whole one: the default buffer holds two segments, so a whole one waiting beside one
        // out may never fit.
        let enough = max(1, limits.maxBytes / 2)
        if inFlight > 0, !input.inputEnded, (input.boundary ?? input.acknowledged) - next < enough {
            return .waitForInput(from: next + enough - 1)
        }
        window.append(Segment(from: next, phase: .sending))
        return .send(.segment(from: next, limits: limits))
    }

    /// The uploader cut the segment from `from` to `range` (before sending it): the next one
    /// starts at its end.
    mutating func cut(from: Int, _ range: Range<Int>) {
        noteCut(from: from, range)
    }

    /// The cut to send the plain segment from `from` with under `limits` again: the one it was
    /// last sent with (or an earlier run's, from the spool), when it still fits; nil: cut anew.
    func keptCut(from: Int, limits: SegmentLimits) -> Range<Int>? {
        let kept = window.first { $0.from == from }?.kept ?? recoveredCuts.first { $0.lowerBound == from }
        guard let kept, kept.count <= limits.maxBytes else { return nil }
        return kept
    }

    /// The cuts of the segments not acknowledged yet, in stream order (what a spool keeps).
    var cuts: [Range<Int>] {
        let current = window.compactMap(\.kept)
        let earlier = recoveredCuts.filter { cut in cut.upperBound > acknowledged && !current.contains { $0.lowerBound == cut.lowerBound } }
        return (current + earlier).sorted { $0.lowerBound < $1.lowerBound }
    }

    /// Records where the segment from `from` ends (a request that carried nothing says
    /// nothing); a piece cut short of its bound leaves the rest as a segment of its own.
    mutating func noteCut(from: Int, _ carried: Range<Int>) {
        guard !configuration.resumable, !carried.isEmpty, carried.lowerBound == from else { return }
        let index = segmentIndex(from: from)
        guard window[index].end == nil else { return }
        window[index].end = carried.upperBound
        window[index].kept = carried
        let acknowledged = acknowledged
        recoveredCuts.removeAll { $0.lowerBound == from || $0.upperBound <= acknowledged }
        if let bound = window[index].bound, carried.upperBound < bound {
            window[index].bound = nil
            window.insert(Segment(from: carried.upperBound, bound: bound, phase: .resend, failed: window[index].failed), at: index + 1)
        }
    }

    /// The limits for sending `segment`: the current ones, within its bound.
    func limits(for segment: Segment) -> SegmentLimits {
        var limits = self.limits
        if let bound = segment.bound { limits.maxBytes = max(1, min(limits.maxBytes, bound - segment.from)) }
        return limits
    }

    /// The index of the segment from `from`, added in order when a result names one the
    /// machine did not ask for (tests hand results directly).
    mutating func segmentIndex(from: Int) -> Int {
        if let index = window.firstIndex(where: { $0.from == from }) { return index }
        let index = window.firstIndex { $0.from > from } ?? window.count
        window.insert(Segment(from: from, phase: .sending), at: index)
        return index
    }

    /// A 2xx for the segment from `from` (the whole of it): stored, and the stream acknowledged
    /// up to the first segment not stored when it was the first.
    mutating func stored(from: Int, now: Instant, answered answer: Answer? = nil) -> [Effect] {
        let index = segmentIndex(from: from)
        window[index].phase = .stored
        window[index].end = window[index].end ?? from
        concurrency.answered(in: answer?.took)
        guard index == 0 else { return [] }
        return succeeded(acknowledging: takeStoredPrefix(), now: now)
    }

    /// Splits the segment from `from` at `offset` (a partial answer processed it up to there):
    /// the part before is stored, the rest is a segment of its own, sent at once unless a
    /// failure says otherwise.
    mutating func storedPart(from: Int, upTo offset: Int, now: Instant) -> [Effect] {
        let index = segmentIndex(from: from)
        let end = window[index].end
        window[index].end = offset
        let bound = index + 1 < window.count ? (end ?? window[index + 1].from) : nil
        window.insert(Segment(from: offset, bound: bound, phase: .resend, failed: window[index].failed), at: index + 1)
        return stored(from: from, now: now)
    }

    /// Removes the stored segments at the front of the window and returns where they end
    /// (the acknowledged offset when none is stored).
    mutating func takeStoredPrefix() -> Int {
        var reached = acknowledged
        while let first = window.first, first.phase == .stored {
            reached = max(reached, first.end ?? first.from)
            window.removeFirst()
        }
        return reached
    }

    /// The plain segment of `exchange` goes out again (same cut) when its turn comes; with
    /// segments after it, a smaller cut ends by where the next one starts.
    mutating func sendAgain(_ exchange: Exchange) {
        guard !configuration.resumable, case .segment(let from, _) = exchange else { return }
        let index = segmentIndex(from: from)
        window[index].phase = .resend
        window[index].failed = true
        // Its next cut says where it ends (the same cut unless it must be smaller).
        if index + 1 < window.count, let end = window[index].end { window[index].bound = window[index].bound ?? end }
        window[index].end = nil
    }

    /// The plain segment from `from` is refused for good: set aside once it is first.
    mutating func setAside(from: Int, carried: Range<Int>, limits: SegmentLimits, reason: String) {
        let index = segmentIndex(from: from)
        let held = carried.isEmpty ? window[index].end.map { from..<$0 } ?? carried : carried
        var limits = limits
        if let next = index + 1 < window.count ? window[index + 1].from : nil { limits.maxBytes = max(1, min(limits.maxBytes, next - from)) }
        window[index].phase = .deadLetter(carried: held, limits: limits, reason: reason)
    }

    /// Whether `problem` says the receiver (or the way to it) is overloaded: the window shrinks.
    static func isOverload(_ problem: Problem) -> Bool {
        switch problem {
        case .answer(let answer): answer.status == 429 || answer.status == 503 || answer.status == 408 || answer.status == 504
        case .failure(let failure): failure.kind == .transport
        }
    }
}
