import Foundation

/// Acknowledgements, the saved source positions, dead letters and refused records (the
/// machine's effects, carried out).
extension StreamUploader {
    /// The server holds the stream below `offset`: free it, and (bytes in memory) save where
    /// that puts the producer's sources. With a spool, files are deleted only once the saved
    /// positions cover them (they are the only record of where those bytes came from).
    /// `wakingLater`: the producer waiting for room is woken by `buffer.wakeHeld()` (or the
    /// delivery task's next wait on the buffer), not now.
    func acknowledge(upTo offset: Int, wakingLater: Bool = false) {
        guard spool == nil else {
            buffer.acknowledge(upTo: offset, releasingBelow: stateStore?.savedOffset, wakingLater: wakingLater)
            return
        }
        let positions = buffer.acknowledge(upTo: offset, wakingLater: wakingLater)
        guard let stateStore, !positions.isEmpty else { return }
        stateStore.update(positions, at: offset, paths: path(of:at:))
        saveState(stateStore)
    }

    /// How often the checkpoints save where the sources stand: each save is a synced file, so
    /// not one per line.
    static let checkpointInterval: Duration = .milliseconds(100)

    /// With a spool and a state file, saves where the sources stand at the end of what the
    /// spool holds, every ``checkpointInterval`` on the uploader's clock until the returned task
    /// is cancelled, and lets the spool delete what is both acknowledged and covered.
    func startCheckpoints() -> Task<Void, Never>? {
        guard spool != nil, stateStore != nil else { return nil }
        return Task { [self] in
            while (try? await clock.sleep(for: Self.checkpointInterval)) != nil {
                saveSpooledPositions()
            }
        }
    }

    /// Where a ``PositionedProducer`` reports the sources it begins or stops following: into
    /// the state store, saved by the checkpoints (spool) or soon after (memory). Holds the store,
    /// not the uploader (the producer keeps the closure). Nil without a state file.
    func sourceReporter() -> (@Sendable (SourceChange) -> Void)? {
        guard let stateStore else { return nil }
        let savesSoon = spool == nil
        return { change in
            stateStore.record(change)
            guard savesSoon else { return }
            stateStore.saveSoon()
        }
    }

    /// Before a segment goes out: saves the time bases made and the sources reported since the
    /// last save, so that the lines of its records, read again after a restart, get the times
    /// they are sent with now, in the same stream. A failed save is said (by the store, once
    /// while saves fail) and the segment goes anyway: a line resent after a restart may then be
    /// stored twice, never lost.
    func saveNewTimes() {
        try? stateStore?.saveBeforeSegment()
    }

    /// The names of the records in `segment` after their source lines, for an envelope that
    /// names records: only when the bytes are in memory and a state file keeps the positions
    /// (a spool keeps the stream, and its offsets name the records across restarts).
    func recordNames(for segment: Range<Int>) -> RecordNames? {
        guard spool == nil, let times = stateStore?.times, configuration.body.envelope?.identifiedPrefix != nil else { return nil }
        return RecordNames(entries: buffer.sourceEntries(overlapping: segment), times: times)
    }

    private func saveSpooledPositions() {
        guard let stateStore else { return }
        let (written, positions) = buffer.latestSourcePositions
        stateStore.update(positions, at: written, paths: path(of:at:))
        saveState(stateStore)
        buffer.releaseStorage(below: min(buffer.acknowledgedOffset, stateStore.savedOffset))
    }

    /// The last save of a run: with a spool, where the sources stand at its end.
    func saveSourcesAtEnd() {
        guard spool != nil else { return }
        saveSpooledPositions()
    }

    /// Saves `store`; a failure is said by the store, once while saves fail.
    private func saveState(_ store: SourceStateStore) {
        _ = try? store.save()
    }

    /// The path to save with `source`'s `position`, as the producer knows it.
    func path(of source: SourceID, at position: Int64) -> String? {
        state.withLock { $0.producerReference }?.path(of: source, at: position)
    }

    /// Sets the stream bytes `range` aside in the dead-letter directory, with why and the start
    /// of the server's answer.
    func keepDeadLetter(_ range: Range<Int>, reason: String, answer: UploadResponse?) throws {
        guard let deadLetters else { return }
        let file = try deadLetters.keep(range, of: buffer, streamID: streamID, url: configuration.url, reason: reason, answer: answer)
        let skipped = state.withLock { state in
            state.deadLetters += 1
            state.deadLetterBytes += range.count
            state.skipped += range.count
            return state.skipped
        }
        try spool?.saveSkipped(skipped)
        onEvent(.deadLettered(bytes: range.count, file: file, reason: reason))
    }

    /// Reports refused records and, with a dead-letter directory, keeps them (all of them in
    /// one pair of files per answer; the whole request when the answer did not say which).
    func reject(_ rejection: Machine.RecordRejection, answer: UploadResponse?) throws {
        var file: String?
        if let deadLetters {
            if rejection.whole, let range = rejection.records.first?.range {
                file = try deadLetters.keep(range, of: buffer, streamID: streamID, url: configuration.url, reason: rejection.summary, answer: answer)
            } else {
                file = try deadLetters.keep(
                    records: rejection.records.map { ($0.range, $0.reason) }, of: buffer, streamID: streamID, url: configuration.url,
                    reason: rejection.summary, answer: answer)
            }
        }
        state.withLock { $0.rejectedRecords += rejection.count }
        onEvent(.recordsRejected(count: rejection.count, reason: rejection.summary, file: file))
    }
}
