import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The end of a spool that stops in the middle of a record: a run stopped (a signal, a kill)
/// after the spool took part of a line, and the rest of it was never read. New input written
/// after it would be glued onto that fragment, so the fragment is cut off before anything is
/// written (unless the same input goes on from where the fragment ends).
extension SpoolStorage {
    /// The offset just past the last `\n` in `start..<end` of the spool, or `start` when there
    /// is none (the bytes are read back from the end, 64 KiB at a time).
    func lastLineEnd(in range: Range<Int>) throws(StreamUpError) -> Int {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: SpoolIndexEntry.maxLength, alignment: 16)
        defer { buffer.deallocate() }
        var position = range.upperBound
        while position > range.lowerBound {
            let start = max(range.lowerBound, position - buffer.count)
            var filled = 0
            while filled < position - start {
                filled += try read(at: start + filled, into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled..<position - start]))
            }
            if let newline = ReplayBuffer.lastNewline(in: UnsafeRawBufferPointer(rebasing: buffer[..<filled])) {
                return start + newline + 1
            }
            position = start
        }
        return range.lowerBound
    }

    /// Cuts the spool's unacknowledged end back to `offset`: files wholly past it go (emptied
    /// first, then the marks name the new newest file, then they are unlinked, so a crash in
    /// between leaves what opening accepts), and the last entry of the file that holds
    /// `offset` is shortened with the CRC-32 of what is left.
    func cut(to offset: Int) throws(StreamUpError) {
        var list = files.withLock { $0 }
        guard offset >= recordedAcknowledged, let end = list.last?.end, offset < end else { return }
        var gone: [File] = []
        while list.count > 1, let last = list.last, last.start >= offset { gone.append(list.removeLast()) }
        guard var file = list.last else { return }
        for newer in gone {
            _ = ftruncate(newer.data, 0)
            _ = ftruncate(newer.index, 0)
        }
        if !gone.isEmpty { try writeMarks(SpoolMarks(acknowledged: recordedAcknowledged, newest: file.start)) }
        for newer in gone {
            SystemCall.close(newer.data)
            SystemCall.close(newer.index)
            unlink(Self.path(of: newer.start, in: directory, suffix: "spool"))
            unlink(Self.path(of: newer.start, in: directory, suffix: "index"))
        }
        let indexPath = Self.path(of: file.start, in: directory, suffix: "index")
        let dataPath = Self.path(of: file.start, in: directory, suffix: "spool")
        let indexBytes = try SystemCall.readAll(file.index, count: file.entryCount * SpoolIndexEntry.size, at: 0, "cannot read \(indexPath)")
        var kept: [SpoolIndexEntry] = []
        for number in 0..<file.entryCount {
            let entry = indexBytes.withUnsafeBytes { raw in
                SpoolIndexEntry(decoding: UnsafeRawBufferPointer(rebasing: raw[number * SpoolIndexEntry.size..<(number + 1) * SpoolIndexEntry.size]))
            }
            guard let entry, entry.streamStart < offset else { break }
            kept.append(entry)
        }
        if var last = kept.last, last.streamEnd > offset {
            let bytes = try SystemCall.readAll(file.data, count: offset - last.streamStart, at: last.streamStart - file.start, "cannot read \(dataPath)")
            last.length = bytes.count
            last.dataCRC = Checksum.crc32(bytes)
            if last.verbatim { last.sourceEnd = last.sourceStart + Int64(last.length) }
            kept[kept.count - 1] = last
            try SystemCall.writeAll(file.index, last.encoded, at: (kept.count - 1) * SpoolIndexEntry.size, "cannot write \(indexPath)")
        }
        _ = ftruncate(file.index, off_t(kept.count * SpoolIndexEntry.size))
        if ftruncate(file.data, off_t(offset - file.start)) != 0 {
            throw StreamUpError(.io, "cannot shorten \(dataPath)", errno: errno)
        }
        file.size = offset - file.start
        file.entryCount = kept.count
        file.lastEntry = kept.last
        // Acknowledgements may have released older files meanwhile: only the cut ones change.
        files.withLock { files in
            files.removeAll { current in gone.contains { $0.start == current.start } }
            if let index = files.lastIndex(where: { $0.start == file.start }) { files[index] = file }
        }
    }
}
