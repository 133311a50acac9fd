import Foundation
import Synchronization

/// Keeps a producer's source positions and saves them to the state file, for a
/// ``ReliableUploader``: after each acknowledgement (bytes in memory) or every 100 ms while
/// bytes reach a spool. Saves are `fsync`ed (``AtomicFile``) and run one at a time on a serial
/// queue, never under the store's lock.
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
    }

    let file: String
    private let state: Mutex<State>
    private let saving = DispatchQueue(label: "streamup.state-file")

    /// A store for `file` that starts from `initial` (loaded, folded with a spool).
    init(file: String, initial: SourceState, streamID: String, streamOffset: Int) {
        self.file = file
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

    /// Records that the stream up to `streamOffset` puts each source at its position.
    func update(_ offsets: [SourceID: Int64], at streamOffset: Int, paths: (SourceID) -> String?) {
        guard !offsets.isEmpty || streamOffset != state.withLock({ $0.streamOffset }) else { return }
        // Paths are asked for outside the lock: it is the producer's call.
        let named = offsets.map { (source: $0.key, offset: $0.value, path: paths($0.key)) }
        state.withLock { state in
            for entry in named {
                let path = entry.path ?? state.positions[entry.source]?.path ?? ""
                state.positions[entry.source] = SourcePosition(source: entry.source, path: path, offset: entry.offset)
                state.order.removeAll { $0 == entry.source }
                state.order.append(entry.source)
            }
            state.streamOffset = max(state.streamOffset, streamOffset)
            state.dirty = true
        }
    }

    /// Saves what changed since the last save; returns the stream offset the file now stands for.
    /// - Throws: ``StreamUpError`` when the file cannot be written.
    @discardableResult
    func save() throws -> Int {
        try saving.sync {
            let snapshot = state.withLock { state -> (SourceState, Int)? in
                guard state.dirty else { return nil }
                state.dirty = false
                let sources = state.order.compactMap { state.positions[$0] }
                return (SourceState(streamID: state.streamID, streamOffset: state.streamOffset, sources: sources), state.streamOffset)
            }
            guard let (saved, offset) = snapshot else { return savedOffset }
            do {
                try saved.save(to: file)
            } catch {
                state.withLock { $0.dirty = true }
                throw error
            }
            state.withLock { $0.savedOffset = max($0.savedOffset, offset) }
            return offset
        }
    }
}
