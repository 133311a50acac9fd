import Foundation

/// The storage of an upload, opened: the replay buffer over memory or a spool, and what an
/// earlier run left in the spool (its stream's name and offsets, the bytes it set aside, where
/// it cut the segments it sent, its resumable upload), with the saved source positions that
/// the spool's records move on. What `StreamUploader.init` builds on.
///
/// Thread safety: a value type; the buffer and the spool it holds guard themselves.
struct UploadStorage {
    let buffer: ReplayBuffer
    let spool: SpoolStorage?
    /// The stream's name: the options' (or one drawn now), or the spool's when it still held bytes.
    let streamID: String
    /// The resumable upload an earlier run left at the same target.
    let recoveredUpload: ResumableUploadReference?
    /// Bytes an earlier run set aside as dead letters (offsets leave them out).
    let skipped: Int
    /// Where an earlier run cut the segments it sent and that are not acknowledged.
    let cuts: [Range<Int>]
    /// The saved source positions (empty without a state file), moved on by what the spool
    /// holds past them: the producer goes on after it.
    let sourceState: SourceState

    /// Opens the storage `options` name for an upload to `url`; `onEvent` hears what an earlier
    /// run left wrong in a spool (and what a spool says later).
    /// - Throws: ``StreamUpError`` when the storage cannot hold one record, or the spool or the
    ///   state file cannot be opened.
    static func open(
        _ options: StreamUploader.Options, url: URL, clock: UploadClock, onEvent: @escaping @Sendable (UploadEvent) -> Void
    ) throws -> UploadStorage {
        let drawnID = options.streamID ?? UUID().uuidString.lowercased()
        let stateFile = options.stateFile?.path
        let tracksSources = stateFile != nil
        let sourceState = try stateFile.flatMap { try SourceState.load(from: $0) } ?? SourceState(sources: [])
        switch options.storage {
        case .spool(let directory, let capacity):
            return try openSpool(
                directory.path, capacity: capacity, options, url: url, clock: clock, tracksSources: tracksSources, drawnID: drawnID,
                sourceState: sourceState, onEvent: onEvent)
        case .memory(let capacity) where options.delivery == .singleRequest:
            // Bytes, not records: the stream goes out as the producer writes it.
            return UploadStorage(
                buffer: .live(capacity: capacity), spool: nil, streamID: drawnID, recoveredUpload: nil, skipped: 0, cuts: [],
                sourceState: sourceState)
        case .memory(let capacity):
            try checkRecordFits(options.maxRecordBytes, in: capacity, "a buffer of \(capacity) bytes (--buffer-size)", remedy: "--buffer-size")
            // The saved stream goes on where its saved positions stand when the options name it:
            // a producer that makes the same bytes again from there (a journal) keeps its offsets.
            let start = options.streamID != nil && sourceState.streamID == options.streamID ? max(0, sourceState.streamOffset ?? 0) : 0
            let buffer = ReplayBuffer(
                storage: MemoryReplayStorage(capacity: capacity), records: options.records, maxRecord: options.maxRecordBytes,
                acknowledged: start, written: start, tracksSources: tracksSources, keepsSourceEntries: true, clock: clock)
            return UploadStorage(buffer: buffer, spool: nil, streamID: drawnID, recoveredUpload: nil, skipped: 0, cuts: [], sourceState: sourceState)
        }
    }

    /// Opens the spool in `directory` and what an earlier run left there.
    private static func openSpool(
        _ directory: String, capacity spoolCapacity: Int?, _ options: StreamUploader.Options, url: URL, clock: UploadClock, tracksSources: Bool,
        drawnID: String, sourceState: SourceState, onEvent: @escaping @Sendable (UploadEvent) -> Void
    ) throws -> UploadStorage {
        let capacity = spoolCapacity ?? SpoolStorage.defaultCapacity(for: directory)
        let spool = try SpoolStorage.open(directory: directory, capacity: max(1, capacity), streamID: drawnID)
        // What an earlier run left counts (a spool that filled its file system is drained).
        try checkRecordFits(
            options.maxRecordBytes, in: spool.capacity,
            spoolCapacity == nil
                ? "the spool's default size (half the free space of the file system of \(directory): \(capacity) bytes)"
                : "a spool of \(capacity) bytes (--spool-size)", remedy: "--spool-size")
        var recovered = spool.recovered
        for note in recovered.notes { onEvent(.notice(note)) }
        spool.setNotice({ onEvent(.notice($0)) }, clock: clock)
        // The next input would be glued onto a record an earlier run left unfinished, unless
        // it is the same input going on from where that record stops (a followed file whose
        // saved position is the spool's end).
        let continued = tracksSources && recovered.sources.last?.streamEnd == recovered.end
        if options.records == .lines, !continued, recovered.inputEnd != recovered.end, recovered.end > recovered.acknowledged {
            let whole = try wholeRecordsEnd(in: spool, from: recovered.acknowledged, to: recovered.end, maxRecord: options.maxRecordBytes)
            if whole < recovered.end {
                try spool.cut(to: whole)
                let dropped = recovered.end - whole
                onEvent(
                    .notice(
                        "spool \(directory): dropped its last \(dropped) byte\(dropped == 1 ? "" : "s"), a record an earlier run stopped in the middle of (the rest of its input was never read)"
                    ))
                recovered.end = whole
            }
        }
        let buffer = ReplayBuffer(
            storage: spool, records: options.records, maxRecord: options.maxRecordBytes, acknowledged: recovered.acknowledged,
            written: recovered.end, tracksSources: tracksSources, keepsSourceEntries: false, clock: clock)
        return UploadStorage(
            buffer: buffer, spool: spool, streamID: recovered.streamID,
            // An upload made at another target is not this run's to continue.
            recoveredUpload: recovered.upload.flatMap { $0.target == url.absoluteString ? $0 : nil }, skipped: recovered.skipped,
            cuts: recovered.cuts,
            // What the spool holds past the saved positions is sent from the spool: the
            // producer goes on after it.
            sourceState: fold(recovered.sources, onto: sourceState, streamID: recovered.streamID))
    }

    /// The end of the last whole record among a spool's bytes `start..<end`: after the last
    /// `\n`, or after the last piece of `maxRecord` bytes a longer record was split into.
    static func wholeRecordsEnd(in spool: SpoolStorage, from start: Int, to end: Int, maxRecord: Int) throws(StreamUpError) -> Int {
        let lineEnd = try spool.lastLineEnd(in: start..<end)
        return lineEnd + (end - lineEnd) / maxRecord * maxRecord
    }

    /// Refuses a storage of `capacity` bytes (`what`, for the message; `remedy`, the option
    /// that sizes it) that cannot hold one record of `maxRecord` bytes: the capacity is never
    /// raised behind the caller's back.
    static func checkRecordFits(
        _ maxRecord: Int, in capacity: Int, _ what: @autoclosure () -> String, remedy: String
    ) throws(StreamUpError) {
        guard maxRecord > capacity else { return }
        throw StreamUpError(
            .invalidConfiguration,
            "\(what()) cannot hold one record of up to \(maxRecord) bytes (--max-record): give a larger \(remedy) or a smaller --max-record (segments are at most half of it: --segment-bytes)"
        )
    }

    /// The positions `entries` (a spool's index past its acknowledged offset) put the sources
    /// at, over the saved `state`: entries the state already covers change nothing.
    static func fold(_ entries: [SourceIndex.Entry], onto state: SourceState, streamID: String) -> SourceState {
        guard !entries.isEmpty else { return state }
        let covered = state.streamID == streamID ? (state.streamOffset ?? 0) : 0
        var result = state
        for entry in entries where entry.streamEnd > covered {
            if let index = result.sources.firstIndex(where: { $0.source == entry.source }) {
                var position = result.sources.remove(at: index)
                position.offset = entry.end
                result.sources.append(position)
            } else {
                result.sources.append(SourcePosition(source: entry.source, path: "", offset: entry.end))
            }
        }
        result.streamOffset = entries.last.map(\.streamEnd)
        return result
    }

}
