/// Which stream bytes came from which source position, so that an acknowledged offset can be
/// turned into the positions to continue from (``StreamUploader`` saves them in its state
/// file). A pure value: entries go in as bytes are written and come out as they are
/// acknowledged.
///
/// Consecutive writes from the same source join into one entry (verbatim bytes when they are
/// contiguous; records made from the same source range when their marks are equal), so a file
/// read in many small pieces costs one entry, not one per read.
///
/// Thread safety: a value type; `ReplayBuffer` keeps it in its `ReplayLog`, under its lock.
struct SourceIndex {
    /// Stream bytes `streamStart..<streamEnd` came from `source`, positions `start..<end`.
    struct Entry: Equatable {
        var streamStart: Int
        var streamEnd: Int
        var source: SourceID
        var start: Int64
        var end: Int64
        /// Whether stream and source bytes map one to one.
        var verbatim: Bool

        /// The source position that stream offset `offset` (inside or at the end) stands for.
        func position(at offset: Int) -> Int64 {
            if offset >= streamEnd { return end }
            return verbatim ? start + Int64(offset - streamStart) : start
        }
    }

    private(set) var entries: [Entry] = []
    private var head = 0
    /// Whether entries are kept (for acknowledgements); `latest` is kept either way.
    let keepsEntries: Bool

    init(keepsEntries: Bool = true) {
        self.keepsEntries = keepsEntries
    }
    /// Where each source stands at the written end (what a spool holds).
    private(set) var latest: [SourceID: Int64] = [:]

    /// The entries of bytes in `range` (none of no bytes), in stream order.
    func entries(overlapping range: Range<Int>) -> [Entry] {
        // Entries are in stream order: the first one that ends past the range's start, by halves.
        var low = head
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].streamEnd <= range.lowerBound { low = middle + 1 } else { high = middle }
        }
        var result: [Entry] = []
        for entry in entries[low...] {
            guard entry.streamStart < range.upperBound else { break }
            if entry.streamEnd > entry.streamStart { result.append(entry) }
        }
        return result
    }

    /// Records that stream bytes `offset..<offset + count` came from `mark`.
    mutating func append(at offset: Int, count: Int, mark: SourceMark) {
        guard count > 0 else { return }
        let end = mark.end ?? mark.start + Int64(count)
        latest[mark.source] = end
        guard keepsEntries else { return }
        if head < entries.count, var last = entries.last, last.streamEnd == offset, last.source == mark.source {
            let joins = mark.end == nil ? (last.verbatim && last.end == mark.start) : (!last.verbatim && last.start == mark.start && last.end == end)
            if joins {
                last.streamEnd = offset + count
                last.end = end
                entries[entries.count - 1] = last
                return
            }
        }
        entries.append(Entry(streamStart: offset, streamEnd: offset + count, source: mark.source, start: mark.start, end: end, verbatim: mark.end == nil))
    }

    /// Records that `mark`'s source bytes, read when the stream had `offset` bytes, stand for
    /// none of it (a record left out): the source's position passes them with the entry before
    /// (when it is of the same source and ends there), or else with the next acknowledgement that
    /// reaches `offset`.
    mutating func skip(at offset: Int, mark: SourceMark) {
        let end = mark.end ?? mark.start
        latest[mark.source] = end
        guard keepsEntries else { return }
        if head < entries.count, let last = entries.last, last.streamEnd == offset, last.source == mark.source, !last.verbatim, last.end == mark.start {
            entries[entries.count - 1].end = end
            return
        }
        entries.append(Entry(streamStart: offset, streamEnd: offset, source: mark.source, start: end, end: end, verbatim: false))
    }

    /// The positions the stream up to `offset` stands for, per source with bytes before it; the
    /// entries wholly before `offset` are dropped.
    mutating func acknowledge(upTo offset: Int) -> [SourceID: Int64] {
        var positions: [SourceID: Int64] = [:]
        // An entry of no bytes (records left out) is passed once the stream before it is.
        while head < entries.count,
            entries[head].streamStart < offset || entries[head].streamEnd == entries[head].streamStart && entries[head].streamStart <= offset
        {
            let entry = entries[head]
            positions[entry.source] = entry.position(at: offset)
            guard entry.streamEnd <= offset else {
                // Partly acknowledged: a verbatim entry goes on from the offset.
                if entry.verbatim {
                    entries[head].start = entry.position(at: offset)
                    entries[head].streamStart = offset
                }
                break
            }
            head += 1
        }
        if head > 64 && head * 2 > entries.count {
            entries.removeFirst(head)
            head = 0
        }
        return positions
    }

    /// The entries not yet acknowledged, oldest first.
    var pending: ArraySlice<Entry> { entries[head...] }
}
