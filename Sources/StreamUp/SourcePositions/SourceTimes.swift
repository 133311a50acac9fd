import StreamUpSystem

/// The times of the records made from followed files' lines, kept with the saved positions so
/// that lines read again after a restart (sent, but not acknowledged, when the process ended)
/// get the times they had. Loki drops an entry whose stream, time and line equal one it holds:
/// a resend that keeps its times is stored once.
///
/// A record's time comes from a base of its source: `nanoseconds + (offset - start)` for the
/// line at source offset `offset`, one nanosecond per source byte, so the records of a file
/// have distinct, increasing times. A new base starts at a line when the base before it would
/// time the line more than ``freshness`` before the clock does, or when the line is ``span``
/// bytes or more past the base's start: times stay within 10 ms of when lines were read.
///
/// The uploader saves the bases in the state file before it sends a segment holding a record
/// one of them timed (``needsSave``), and drops those the acknowledged position has passed
/// (``prune(_:below:)``). After a restart the saved bases time the lines read again, whatever
/// the clock says: the newest base at or before a line, within ``span`` bytes of its start.
/// A line that went out before gets its old time; one that never did may get a time in the past
/// (by as long as the process was down, for at most ``span`` bytes of each file).
///
/// The clock is the time a line was read, or for a container runtime's line (`--parse`) the
/// time the runtime wrote in it (``nanoseconds(of:at:writtenAt:)``): the bases then start at the
/// runtime's times, the same in every run that reads the line, so a record read again gets the
/// same time, and every record's is at most ``freshness`` before its runtime's.
///
/// Thread safety: `state` is guarded by a Mutex; formatters call from the producer's thread,
/// the uploader and its state store from theirs. Nothing is called out under the lock.
package final class SourceTimes: Sendable {
    /// Lines later than a base by more than this get a base of their own.
    static let freshness: Int64 = 10_000_000
    /// Lines this many bytes or more past a base's start get a base of their own.
    static let span: Int64 = 256 * 1024

    /// A base: the line at source offset `start` has time `nanoseconds` (Unix nanoseconds).
    ///
    /// Thread safety: a value type.
    package struct Base: Codable, Equatable, Sendable {
        package var start: Int64
        package var nanoseconds: Int64

        package init(start: Int64, nanoseconds: Int64) {
            self.start = start
            self.nanoseconds = nanoseconds
        }
    }

    /// The bases of one source, as the state file keeps them.
    ///
    /// Thread safety: a value type.
    package struct Saved: Codable, Equatable, Sendable {
        package var source: SourceID
        package var bases: [Base]

        package init(source: SourceID, bases: [Base]) {
            self.source = source
            self.bases = bases
        }
    }

    private struct Bases {
        /// By start, the earliest first.
        var bases: [Base] = []
        /// How many of the first `bases` an earlier run saved: they time lines whatever the clock says.
        var loaded = 0
        /// Where the lines an earlier run may have sent begin (its saved position): a line before
        /// it is read again only because the file was truncated, and is not one of them.
        var replayFrom: Int64 = 0

        /// The index of the first base that starts after `offset` (`bases.count` if none does):
        /// the one before it, if any, is the newest at or before `offset`. The bases are sorted
        /// by start, so a binary search finds it.
        func firstBase(after offset: Int64) -> Int {
            var low = 0
            var high = bases.count
            while low < high {
                let middle = (low + high) / 2
                if bases[middle].start <= offset { low = middle + 1 } else { high = middle }
            }
            return low
        }
    }

    private struct State {
        var sources: [SourceID: Bases] = [:]
        /// Whether a base was made since the last ``snapshot()``.
        var unsaved = false
    }

    private let state: Mutex<State>

    /// Bases that start from what an earlier run saved, for the lines from each source's saved
    /// position on.
    package init(loaded: [Saved] = [], positions: [SourcePosition] = []) {
        var state = State()
        let from = Dictionary(positions.map { ($0.source, $0.offset) }, uniquingKeysWith: max)
        for saved in loaded where !saved.bases.isEmpty {
            let bases = saved.bases.sorted { $0.start < $1.start }
            state.sources[saved.source] = Bases(bases: bases, loaded: bases.count, replayFrom: from[saved.source] ?? 0)
        }
        self.state = Mutex(state)
    }

    /// The time of the record made from the line at `offset` of `source`, read at
    /// `readNanoseconds` (Unix nanoseconds).
    package func nanoseconds(of source: SourceID, at offset: Int64, readAt readNanoseconds: Int64) -> Int64 {
        nanoseconds(of: source, at: offset, clock: readNanoseconds, savedWin: true)
    }

    /// The time of the record made from the line at `offset` of `source`, which a container
    /// runtime wrote at `runtimeNanoseconds` (Unix nanoseconds, the time in the line). The
    /// runtime's clock reads the same whenever the line is read, so the saved bases need not
    /// win over it: a base starts wherever the runtime's time is more than ``freshness`` past the
    /// one before, after a restart too (the same bases the earlier run made, where it read).
    package func nanoseconds(of source: SourceID, at offset: Int64, writtenAt runtimeNanoseconds: Int64) -> Int64 {
        nanoseconds(of: source, at: offset, clock: runtimeNanoseconds, savedWin: false)
    }

    /// The time of the line at `offset` of `source` by `readNanoseconds`, the saved bases
    /// timing it whatever that says when `savedWin`.
    private func nanoseconds(of source: SourceID, at offset: Int64, clock readNanoseconds: Int64, savedWin: Bool) -> Int64 {
        state.withLock { state in
            // Taken out and put back, so that its bases change in place rather than as a copy (a
            // runtime's clock may make a base for each record of a segment).
            var known = state.sources.removeValue(forKey: source) ?? Bases()
            defer { state.sources[source] = known }
            if offset < known.replayFrom {
                // Truncated: what the earlier run sent from this file is not read again.
                known.loaded = 0
                known.replayFrom = 0
            }
            var time = readNanoseconds
            let after = known.firstBase(after: offset)
            if after > 0 {
                let index = after - 1
                let base = known.bases[index]
                let distance = offset - base.start
                let candidate = base.nanoseconds &+ distance
                if distance < Self.span, (savedWin && index < known.loaded) || readNanoseconds - candidate <= Self.freshness {
                    return candidate
                }
                time = max(readNanoseconds, candidate)
            }
            // Bases at or after this line time what the file held before (it was truncated).
            let kept = after > 0 && known.bases[after - 1].start == offset ? after - 1 : after
            known.bases.removeSubrange(kept...)
            known.loaded = min(known.loaded, kept)
            known.bases.append(Base(start: offset, nanoseconds: time))
            state.unsaved = true
            return time
        }
    }

    /// The time fixed for the line at `offset` of `source` (without making a base); nil when
    /// no base times it.
    package func time(of source: SourceID, at offset: Int64) -> Int64? {
        state.withLock { state in
            guard let known = state.sources[source] else { return nil }
            let after = known.firstBase(after: offset)
            guard after > 0 else { return nil }
            let base = known.bases[after - 1]
            return base.nanoseconds &+ (offset - base.start)
        }
    }

    /// Whether a base was made since the last save.
    package var needsSave: Bool { state.withLock { $0.unsaved } }

    /// Drops the bases of `source` that no line at or after `position` needs (the server holds
    /// everything before it): all but the newest base starting at or before it.
    package func prune(_ source: SourceID, below position: Int64) {
        state.withLock { state in
            guard var known = state.sources[source] else { return }
            let newest = known.firstBase(after: position) - 1
            guard newest > 0 else { return }
            known.bases.removeFirst(newest)
            known.loaded = max(0, known.loaded - newest)
            state.sources[source] = known
        }
    }

    /// Forgets the bases of `source` (its position was forgotten).
    package func forget(_ source: SourceID) {
        _ = state.withLock { $0.sources.removeValue(forKey: source) }
    }

    /// The bases to save, by source; what is made after this call makes ``needsSave`` true again.
    package func snapshot() -> [Saved] {
        state.withLock { state in
            state.unsaved = false
            return state.sources.compactMap { source, known in
                known.bases.isEmpty ? nil : Saved(source: source, bases: known.bases)
            }
            .sorted { ($0.source.device, $0.source.inode, $0.source.fingerprint) < ($1.source.device, $1.source.inode, $1.source.fingerprint) }
        }
    }

    /// A save of a ``snapshot()`` failed: the next one writes them again.
    package func saveFailed() {
        state.withLock { $0.unsaved = true }
    }
}
