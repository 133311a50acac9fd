/// One entry of a spool file's index (`OFFSET.index` beside `OFFSET.spool`): a run of stream
/// bytes written to the spool, its CRC-32, and the source bytes it came from. 64 bytes, little
/// endian, the last four a CRC-32 of the other sixty, so a torn or garbled entry is noticed:
///
///     0 streamStart u64 | 8 length u32 | 12 dataCRC u32 | 16 device u64 | 24 inode u64
///     32 fingerprint u64 | 40 sourceStart i64 | 48 sourceEnd i64 | 56 flags u32 | 60 entryCRC u32
///
/// The last entry of the newest file grows in place while writes continue it (same source,
/// contiguous, up to ``maxLength``), so a file read line by line costs an entry per 64 KiB (an
/// entry of formatted records then stands for its source range as a whole). One write makes
/// one entry however long it is (stdin's are 256 KiB): readers assume no bound on `length`.
///
/// Thread safety: a value type.
struct SpoolIndexEntry: Equatable {
    static let size = 64
    /// The length up to which an entry grows by later writes (a single write may be longer).
    static let maxLength = 64 * 1024

    var streamStart: Int
    var length: Int
    var dataCRC: UInt32
    /// Where the bytes came from, if the producer said.
    var source: SourceID?
    var sourceStart: Int64 = 0
    var sourceEnd: Int64 = 0
    /// Whether stream and source bytes map one to one.
    var verbatim = false

    var streamEnd: Int { streamStart + length }

    /// Whether `count` more bytes from `mark` written right after this entry can join it.
    func canExtend(with mark: SourceMark?, count: Int) -> Bool {
        guard length + count <= Self.maxLength else { return false }
        switch (source, mark) {
        case (nil, nil): return true
        case (let source?, let mark?) where source == mark.source:
            // Records made from source bytes join when they continue it (or are pieces of the
            // same records): a restart needs only where an entry ends.
            if let end = mark.end { return !verbatim && (sourceEnd == mark.start || (sourceStart == mark.start && sourceEnd == end)) }
            return verbatim && sourceEnd == mark.start
        default: return false
        }
    }

    /// The entry for `count` bytes at `offset` from `mark`, with CRC `crc`.
    init(streamStart: Int, length: Int, dataCRC: UInt32, mark: SourceMark?) {
        self.streamStart = streamStart
        self.length = length
        self.dataCRC = dataCRC
        if let mark {
            source = mark.source
            sourceStart = mark.start
            sourceEnd = mark.end ?? mark.start + Int64(length)
            verbatim = mark.end == nil
        }
    }

    /// This entry grown by `count` bytes (continuing `mark`) with the CRC of all its bytes.
    func extended(by count: Int, mark: SourceMark?, dataCRC: UInt32) -> SpoolIndexEntry {
        var entry = self
        entry.length += count
        entry.dataCRC = dataCRC
        if let mark { entry.sourceEnd = mark.end ?? mark.start + Int64(count) }
        return entry
    }

    /// The source part as a ``SourceIndex`` entry, for recovery.
    var sourceEntry: SourceIndex.Entry? {
        source.map {
            SourceIndex.Entry(streamStart: streamStart, streamEnd: streamEnd, source: $0, start: sourceStart, end: sourceEnd, verbatim: verbatim)
        }
    }

    /// The 64 bytes on disk.
    var encoded: [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(Self.size)
        func put<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
        put(UInt64(streamStart))
        put(UInt32(length))
        put(dataCRC)
        put(source?.device ?? 0)
        put(source?.inode ?? 0)
        put(source?.fingerprint ?? 0)
        put(sourceStart)
        put(sourceEnd)
        put(UInt32((source != nil ? 1 : 0) | (verbatim ? 2 : 0)))
        put(bytes.withUnsafeBytes { Checksum.crc32($0) })
        return bytes
    }

    /// The entry in `bytes` (64 of them), or nil when its own CRC does not match.
    init?(decoding bytes: UnsafeRawBufferPointer) {
        guard bytes.count == Self.size else { return nil }
        func get<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T {
            T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
        }
        guard get(60, UInt32.self) == Checksum.crc32(UnsafeRawBufferPointer(rebasing: bytes[..<60])) else { return nil }
        let flags = get(56, UInt32.self)
        // Numbers from disk never trap: one out of range fails the checks that follow.
        streamStart = Int(truncatingIfNeeded: get(0, UInt64.self))
        length = Int(get(8, UInt32.self))
        dataCRC = get(12, UInt32.self)
        source = flags & 1 != 0 ? SourceID(device: get(16, UInt64.self), inode: get(24, UInt64.self), fingerprint: get(32, UInt64.self)) : nil
        sourceStart = get(40, Int64.self)
        sourceEnd = get(48, Int64.self)
        verbatim = flags & 2 != 0
    }
}
