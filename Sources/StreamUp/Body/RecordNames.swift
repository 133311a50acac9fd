/// Names the records of a segment after the lines they were made from, for an envelope that
/// names each record (Elasticsearch's `_id`): `DEVICE-INODE-FINGERPRINT-START-PIECE-TIME`, the
/// file, the source offset of the record's line, the record's byte offset among the records made
/// from that one line (0 but for the pieces of a long line or a joined record), and the time
/// ``SourceTimes`` fixed for the line (a record with none keeps its name by its place in the
/// stream, as without a state file); an entry of a sequence source (a journal's,
/// `SourceID/isSequence`) is `DEVICE-INODE-SEQNUM-PIECE`, its position alone. Lines read again after a restart
/// without a spool (from the state file's positions, into a new stream) make records of the same
/// names, so the receiver keeps one document per line; the time tells a line apart from one a
/// truncated file later holds at the same offset.
///
/// Thread safety: a value type (a copy of the segment's entries).
struct RecordNames: Sendable {
    /// The segment's entries, in stream order.
    let entries: [SourceIndex.Entry]
    let times: SourceTimes?

    /// The name of the record that starts at stream offset `offset`; nil when no source is known
    /// for it (the stream offset names it then).
    func name(at offset: Int) -> [UInt8]? {
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].streamEnd <= offset { low = middle + 1 } else { high = middle }
        }
        guard low < entries.count, entries[low].streamStart <= offset else { return nil }
        let entry = entries[low]
        let start = entry.verbatim ? entry.position(at: offset) : entry.start
        let piece = entry.verbatim ? 0 : offset - entry.streamStart
        let source = entry.source
        // An entry of a sequence (a journal's) is never rewritten: its position names it alone.
        if source.isSequence { return Array("\(source.device)-\(source.inode)-\(start)-\(piece)".utf8) }
        // Without a time, a line a truncated file later holds at the same offset would take the
        // name (and the receiver would drop it as a copy): such records keep the stream's names.
        guard let time = times?.time(of: source, at: start) else { return nil }
        return Array("\(source.device)-\(source.inode)-\(source.fingerprint)-\(start)-\(piece)-\(time)".utf8)
    }
}
