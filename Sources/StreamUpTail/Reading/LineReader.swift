import StreamUp

/// Reads one followed file in turns of whole lines, so that lines of different files never mix
/// in the stream: a write holds whole lines of one file, each marked with its file and offset
/// (``SourceMark/verbatim(_:from:)``).
///
/// A turn reads at most `chunk` bytes at the file's offset into a scratch buffer (one `pread(2)`;
/// the buffer is allocated once and shared by all files, as turns run one at a time) and
/// writes them up to their last newline; the partial line after it stays in the file and is
/// read again, whole, once its newline is there. A line longer than a chunk is searched for its
/// newline a chunk per turn (other files have their turns meanwhile) and then written in
/// pieces in one go; one longer than `maxLine` is written in pieces of `maxLine` bytes, which a
/// ``StreamUploader`` with the same `maxRecordBytes` takes as records of their own.
///
/// Copying through the scratch buffer costs one `memcpy` per byte; reading straight into the
/// upload's buffer (as ``FileDescriptorProducer`` does) cannot keep a partial line out of it
/// when the free space wraps around the ring's end.
///
/// Thread safety: not copyable, confined to the tailer's thread; owns its scratch buffer.
struct LineReader: ~Copyable {
    /// What a turn left.
    ///
    /// Thread safety: a value type.
    enum Turn: Equatable {
        /// It read a full chunk (or worked on a long line): there may be more.
        case more
        /// Nothing whole is left: the end of the file, or a line waiting for its newline
        /// (``TailedFile/pending`` bytes).
        case end
        /// The file is shorter than the offset (copytruncate): read it again from its start.
        case truncated
    }

    let chunk: Int
    let maxLine: Int
    private let scratch: UnsafeMutableRawBufferPointer

    init(chunk: Int, maxLine: Int) {
        precondition(chunk > 0 && maxLine > 0, "chunks and lines need a positive size")
        self.chunk = chunk
        self.maxLine = maxLine
        scratch = .allocate(byteCount: max(chunk, 2 * FileFingerprint.maximumBytes), alignment: 8)
    }

    deinit {
        scratch.deallocate()
    }

    /// One turn of `tailed` (which must be open) into `sink`.
    func turn(_ tailed: inout TailedFile, into sink: some LineSink) throws -> Turn {
        guard let file = tailed.file else { return .end }
        if tailed.scanned > tailed.offset { return try continueLongLine(&tailed, file, into: sink) }
        let count = try file.read(into: space(chunk), at: tailed.offset)
        guard count > 0 else { return try endOrTruncated(&tailed, file) }
        let bytes = UnsafeRawBufferPointer(rebasing: scratch[..<count])
        if let last = ReplayBuffer.lastNewline(in: bytes) {
            try sink.write(UnsafeRawBufferPointer(rebasing: bytes[...last]), mark: .verbatim(tailed.sourceID, from: tailed.offset))
            tailed.offset += Int64(last + 1)
            tailed.scanned = tailed.offset
            tailed.pending = Int64(count - last - 1)
            return count < chunk ? .end : .more
        }
        guard count == chunk else {
            tailed.pending = Int64(count)
            return .end
        }
        // A line longer than a chunk: search on from here in later turns.
        tailed.scanned = tailed.offset + Int64(count)
        try splitIfTooLong(&tailed, file, into: sink)
        return .more
    }

    /// Sends what follows the last newline of a finished file (rotated away or deleted, read to
    /// its end), with a newline added so it cannot join another file's line. Returns how many
    /// bytes of the file that was (0: none).
    func finish(_ tailed: inout TailedFile, into sink: some LineSink) throws -> Int64 {
        guard let file = tailed.file else { return 0 }
        let size = try file.status().size
        guard size > tailed.offset else { return 0 }
        let start = tailed.offset
        try copy(&tailed, file, upTo: size, into: sink)
        guard tailed.offset > start else { return 0 }
        var newline: UInt8 = 0x0A
        try withUnsafeBytes(of: &newline) { try sink.write($0, mark: nil) }
        tailed.pending = 0
        return tailed.offset - start
    }

    /// The fingerprint of `file`'s first bytes now (`FileFingerprint`).
    func fingerprint(of file: ReadOnlyFile) throws(StreamUpError) -> UInt64 {
        try FileFingerprint.of(file, scratch: scratch)
    }

    /// Whether `file` starts with the bytes of `fingerprint`.
    func file(_ file: ReadOnlyFile, matches fingerprint: UInt64) throws(StreamUpError) -> Bool {
        try FileFingerprint.matches(fingerprint, file, scratch: scratch)
    }

    /// Whether `copy`'s last bytes (up to ``FileFingerprint/maximumBytes`` before `size`) are
    /// `original`'s bytes at the same offsets: with a matching fingerprint, `copy` is a copy of
    /// `original` so far (a file that merely starts alike has bytes of its own further on).
    func file(_ copy: ReadOnlyFile, endsLike original: ReadOnlyFile, size: Int64) throws(StreamUpError) -> Bool {
        let count = Int(min(size, Int64(FileFingerprint.maximumBytes)))
        let mine = space(count)
        let theirs = UnsafeMutableRawBufferPointer(rebasing: scratch[count..<2 * count])
        for (file, buffer) in [(copy, mine), (original, theirs)] {
            var read = 0
            while read < count {
                let got = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[read...]), at: size - Int64(count - read))
                if got == 0 { return false }
                read += got
            }
        }
        return mine.elementsEqual(theirs)
    }

    // MARK: Long lines

    private func continueLongLine(_ tailed: inout TailedFile, _ file: ReadOnlyFile, into sink: some LineSink) throws -> Turn {
        let count = try file.read(into: space(chunk), at: tailed.scanned)
        guard count > 0 else {
            let size = try file.status().size
            if size < tailed.offset { return .truncated }
            tailed.scanned = min(tailed.scanned, max(size, tailed.offset))
            tailed.pending = tailed.scanned - tailed.offset
            return .end
        }
        if let first = ReplayBuffer.firstNewline(in: UnsafeRawBufferPointer(rebasing: scratch[..<count])) {
            try copy(&tailed, file, upTo: tailed.scanned + Int64(first + 1), into: sink)
            tailed.pending = 0
            return .more
        }
        tailed.scanned += Int64(count)
        try splitIfTooLong(&tailed, file, into: sink)
        guard count == chunk else {
            tailed.pending = tailed.scanned - tailed.offset
            return .end
        }
        return .more
    }

    /// A line that has run `maxLine` bytes without a newline goes out as a piece of that size.
    private func splitIfTooLong(_ tailed: inout TailedFile, _ file: ReadOnlyFile, into sink: some LineSink) throws {
        guard tailed.scanned - tailed.offset >= Int64(maxLine) else { return }
        try copy(&tailed, file, upTo: tailed.offset + Int64(maxLine), into: sink)
    }

    /// Writes the file's bytes from its offset up to `end`, a chunk at a time. A file that
    /// shrank meanwhile stops the copy early (the next turn finds it truncated).
    private func copy(_ tailed: inout TailedFile, _ file: ReadOnlyFile, upTo end: Int64, into sink: some LineSink) throws {
        while tailed.offset < end {
            let want = Int(min(Int64(chunk), end - tailed.offset))
            let count = try file.read(into: space(want), at: tailed.offset)
            guard count > 0 else { break }
            try sink.write(UnsafeRawBufferPointer(rebasing: scratch[..<count]), mark: .verbatim(tailed.sourceID, from: tailed.offset))
            tailed.offset += Int64(count)
        }
        tailed.scanned = max(tailed.scanned, tailed.offset)
    }

    private func endOrTruncated(_ tailed: inout TailedFile, _ file: ReadOnlyFile) throws -> Turn {
        if try file.status().size < tailed.offset { return .truncated }
        tailed.pending = 0
        return .end
    }

    private func space(_ count: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: scratch[..<count])
    }
}
