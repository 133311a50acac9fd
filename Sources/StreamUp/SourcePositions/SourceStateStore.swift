import Foundation
import StreamUpHTTP
import StreamUpSystem

/// Keeps a producer's source positions and saves them to the state file, for a
/// ``StreamUploader``: after each acknowledgement (bytes in memory) or every 100 ms while
/// bytes reach a spool, and soon after the producer reports a source it begins or stops
/// following (``SourceChange``). Sources gone for longer than `forgetAfter` are left out of
/// the next save. Saves are `fsync`ed (``AtomicFile``) and run one at a time on a serial
/// queue, never under the store's lock. A save that fails is said once (`notice`), and once
/// more when a save works again: a full disk fails every save, many a second.
///
/// Thread safety: `state` is guarded by a `Mutex`; saves are serialized on `saving`.
final class SourceStateStore: Sendable {
    private struct State {
        var streamID: String
        var streamOffset: Int
        var positions: [SourceID: SourcePosition] = [:]
        /// Sources by last update, the most recent last.
        var order: [SourceID] = []
        var dirty = false
        /// The stream offset the last successful save stands for.
        var savedOffset: Int
        /// Whether a save is scheduled (``saveSoon(onError:)``).
        var saveScheduled = false
        /// Sources forgotten after being gone for `forgetAfter`: later positions for them (a
        /// spool's checkpoints report every source it ever held) do not bring them back.
        var forgotten: Set<SourceID> = []
        /// Whether the last save failed (its failure was said; the next success is said too).
        var saveFailing = false
    }

    let file: String
    /// The time bases of the records made from the sources' lines, saved with the positions
    /// (nil: none are kept).
    let times: SourceTimes?
    /// How long a source may be gone before its position is forgotten; nil: never.
    let forgetAfter: Duration?
    /// When the state this store started from was saved (nil: none was).
    let savedAt: Date?
    /// The wall clock for `goneSince` (injected by tests).
    private let now: @Sendable () -> Date
    /// Where a failing save, and the first save that works after it, are said.
    private let notice: @Sendable (String) -> Void
    private let state: Mutex<State>
    private let saving = DispatchQueue(label: "streamup.state-file")

    /// A store for `file` that starts from `initial` (loaded, folded with a spool).
    init(
        file: String, initial: SourceState, streamID: String, streamOffset: Int, forgetAfter: Duration? = nil,
        times: SourceTimes? = nil, now: @escaping @Sendable () -> Date = { Date() },
        notice: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.file = file
        self.savedAt = SourceState.lastSaved(at: file)
        self.times = times
        self.forgetAfter = forgetAfter
        self.now = now
        self.notice = notice
        var state = State(streamID: streamID, streamOffset: streamOffset, savedOffset: streamOffset)
        for position in initial.sources {
            state.positions[position.source] = position
            state.order.append(position.source)
        }
        self.state = Mutex(state)
    }

    /// The positions, the most recently read last.
    var positions: [SourcePosition] {
        state.withLock { state in state.order.compactMap { state.positions[$0] } }
    }

    /// The stream offset the saved file stands for.
    var savedOffset: Int { state.withLock { $0.savedOffset } }

    /// Records that the stream up to `streamOffset` puts each source at its position. Only a
    /// change makes the next save write the file (a spool's checkpoint repeats every source
    /// every 100 ms; an idle stream then writes nothing), and only changed sources become the
    /// most recent.
    func update(_ offsets: [SourceID: Int64], at streamOffset: Int, paths: (SourceID, Int64) -> String?) {
        guard !offsets.isEmpty || streamOffset != state.withLock({ $0.streamOffset }) else { return }
        // Paths are asked for outside the lock: it is the producer's call.
        let named = offsets.map { (source: $0.key, offset: $0.value, path: paths($0.key, $0.value)) }
        state.withLock { state in
            var changed = streamOffset > state.streamOffset
            for entry in named where !state.forgotten.contains(entry.source) {
                let known = state.positions[entry.source]
                let path = entry.path ?? known?.path ?? ""
                if let known, known.offset == entry.offset, known.path == path { continue }
                state.positions[entry.source] = SourcePosition(source: entry.source, path: path, offset: entry.offset, goneSince: known?.goneSince)
                state.order.removeAll { $0 == entry.source }
                state.order.append(entry.source)
                changed = true
            }
            state.streamOffset = max(state.streamOffset, streamOffset)
            if changed { state.dirty = true }
        }
    }

    /// Records a source the producer begins (a position only if none is known: a known one
    /// stays where acknowledgements put it) or stops following (`goneSince` = now).
    func record(_ change: SourceChange) {
        let now = now()
        state.withLock { state in
            switch change {
            case .following(let position):
                state.forgotten.remove(position.source)
                if var known = state.positions[position.source] {
                    known.path = position.path
                    known.goneSince = nil
                    state.positions[position.source] = known
                } else {
                    state.positions[position.source] = SourcePosition(source: position.source, path: position.path, offset: position.offset)
                    state.order.append(position.source)
                }
            case .stopped(let source):
                guard var known = state.positions[source], known.goneSince == nil else { return }
                // Whole seconds, rounded up: a source is never forgotten early.
                known.goneSince = Int64(now.timeIntervalSince1970.rounded(.up))
                state.positions[source] = known
            }
            state.dirty = true
        }
    }

    /// Saves within about 100 ms, on the saving queue (several calls meanwhile make one save);
    /// a failure is said through `notice`.
    func saveSoon() {
        let first = state.withLock { state in
            defer { state.saveScheduled = true }
            return !state.saveScheduled
        }
        guard first else { return }
        saving.asyncAfter(deadline: .now() + .milliseconds(100)) { [self] in
            state.withLock { $0.saveScheduled = false }
            _ = try? saveOnQueue()
        }
    }

    /// Before a segment is sent: saves the time bases made, and the sources reported, since the
    /// last save, if any. The records' times, and the stream with where each source began, are
    /// then in the file before any byte they stand for can reach the receiver: a run killed
    /// before its first acknowledgement goes on in the same stream from the same place.
    /// - Throws: ``StreamUpError`` when the file cannot be written.
    func saveBeforeSegment() throws {
        guard times?.needsSave == true || state.withLock({ $0.dirty }) else { return }
        try save()
    }

    /// Saves what changed since the last save; returns the stream offset the file now stands for.
    /// - Throws: ``StreamUpError`` when the file cannot be written.
    @discardableResult
    func save() throws -> Int {
        try saving.sync { try saveOnQueue() }
    }

    /// Drops the sources gone for longer than `forgetAfter`; marks the state changed when any
    /// went. Every save does it first.
    func forgetGone() {
        guard let forgetAfter else { return }
        let limit = now().timeIntervalSince1970 - forgetAfter.seconds
        let forgotten = state.withLock { state -> [SourceID] in
            let gone = state.order.filter { source in
                guard let since = state.positions[source]?.goneSince else { return false }
                return TimeInterval(since) < limit
            }
            guard !gone.isEmpty else { return [] }
            for source in gone {
                state.positions[source] = nil
                state.forgotten.insert(source)
            }
            state.order.removeAll { state.positions[$0] == nil }
            state.dirty = true
            return gone
        }
        if let times {
            for source in forgotten { times.forget(source) }
        }
    }

    /// The save itself; runs on `saving` only.
    @discardableResult
    private func saveOnQueue() throws -> Int {
        forgetGone()
        let timesChanged = times?.needsSave ?? false
        let snapshot = state.withLock { state -> (SourceState, Int)? in
            guard state.dirty || timesChanged else { return nil }
            state.dirty = false
            let sources = state.order.compactMap { state.positions[$0] }
            return (SourceState(streamID: state.streamID, streamOffset: state.streamOffset, sources: sources), state.streamOffset)
        }
        guard let (positions, offset) = snapshot else { return savedOffset }
        var saved = positions
        // Pruned with the positions saved (never later ones: the file must time every line
        // read again from them) and taken after them: every base made before a segment is
        // sent is in the save that segment waits for.
        if let times {
            for position in saved.sources { times.prune(position.source, below: position.offset) }
            let bases = times.snapshot()
            saved.times = bases.isEmpty ? nil : bases
        }
        do {
            try saved.save(to: file)
        } catch {
            let first = state.withLock { state in
                state.dirty = true
                defer { state.saveFailing = true }
                return !state.saveFailing
            }
            times?.saveFailed()
            if first {
                notice(
                    "cannot save the state file \(file): \(error); trying again with every save (one line when it works; a "
                        + "restart meanwhile reads again the lines sent since the last save)")
            }
            throw error
        }
        let recovered = state.withLock { state in
            state.savedOffset = max(state.savedOffset, offset)
            defer { state.saveFailing = false }
            return state.saveFailing
        }
        if recovered { notice("the state file \(file) is saved again") }
        return offset
    }
}
