#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where records end in the bytes a writer has just filled, found before they are published,
/// and the newline scans the rest of the package shares (the tailer's line reader, the
/// cut's record-boundary search).
extension ReplayBuffer {
    /// Where records end once `bytes` are written at `offset`, the last boundary before them
    /// being `boundary`: the new last boundary, and the splits of records longer than
    /// `maxRecord` (cut into pieces of that size; a partial record that reaches it is cut too).
    /// Only when the bytes could hold a record that long are they scanned line by line; else
    /// the last `\n` is all there is to find.
    static func boundaries(in bytes: UnsafeRawBufferPointer, at offset: Int, after boundary: Int, maxRecord: Int) -> (boundary: Int, splits: [Int]) {
        let end = offset + bytes.count
        guard end - boundary >= maxRecord else {
            return (lastNewline(in: bytes).map { offset + $0 + 1 } ?? boundary, [])
        }
        var boundary = boundary
        var splits: [Int] = []
        var index = 0
        while let newline = firstNewline(in: UnsafeRawBufferPointer(rebasing: bytes[index...])) {
            let recordEnd = offset + index + newline + 1
            while recordEnd - boundary > maxRecord {
                boundary += maxRecord
                splits.append(boundary)
            }
            boundary = recordEnd
            index += newline + 1
        }
        while end - boundary >= maxRecord {
            boundary += maxRecord
            splits.append(boundary)
        }
        return (boundary, splits)
    }

    /// The index of the last `\n` in `bytes`. Glibc's `memrchr` is not visible to Swift, so
    /// this compares eight bytes at a time (a word has a `\n` byte when the word XOR `\n`s has
    /// a zero byte), which keeps scanning binary input in lines mode at memory speed.
    package static func lastNewline(in bytes: UnsafeRawBufferPointer) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        var end = bytes.count
        let newlines: UInt64 = 0x0A0A_0A0A_0A0A_0A0A
        let low: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        while end >= 8 {
            let word = base.loadUnaligned(fromByteOffset: end - 8, as: UInt64.self) ^ newlines
            if (word &- low) & ~word & high != 0 { break }
            end -= 8
        }
        while end > 0 {
            end -= 1
            if base.load(fromByteOffset: end, as: UInt8.self) == 0x0A { return end }
        }
        return nil
    }

    /// How many `\n` bytes `bytes` holds, eight bytes at a time without a popcount (the
    /// baseline x86-64 has none): a byte of the word XOR `\n`s is zero exactly where a `\n` was,
    /// which the bit trick turns into a 1 in that byte; the bytes of `sums` add these up over at
    /// most 255 words, then their sum is taken. About 0.15 CPU-s per GB here (lines or not).
    static func newlineCount(in bytes: UnsafeRawBufferPointer) -> Int {
        guard let base = bytes.baseAddress else { return 0 }
        let newlines: UInt64 = 0x0A0A_0A0A_0A0A_0A0A
        let low7: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
        let lanes: UInt64 = 0x00FF_00FF_00FF_00FF
        var count = 0
        let words = bytes.count / 8
        var word = 0
        while word < words {
            var sums: UInt64 = 0
            let stop = min(words, word &+ 255)
            while word < stop {
                let x = base.loadUnaligned(fromByteOffset: word &* 8, as: UInt64.self) ^ newlines
                sums &+= ~((((x & low7) &+ low7) | x) | low7) >> 7
                word &+= 1
            }
            let pairs = (sums & lanes) &+ ((sums >> 8) & lanes)
            count &+= Int((pairs &* 0x0001_0001_0001_0001) >> 48)
        }
        var index = words &* 8
        while index < bytes.count {
            if base.load(fromByteOffset: index, as: UInt8.self) == 0x0A { count &+= 1 }
            index &+= 1
        }
        return count
    }

    /// The index of the first `\n` in `bytes` (`memchr`).
    package static func firstNewline(in bytes: UnsafeRawBufferPointer) -> Int? {
        guard let base = bytes.baseAddress, !bytes.isEmpty,
            let found = memchr(base, 0x0A, bytes.count)
        else { return nil }
        return UnsafeRawPointer(found) - base
    }
}
