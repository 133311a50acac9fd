import StreamUp

/// The fingerprint of a file's first bytes, kept in ``SourceID/fingerprint`` so that a saved
/// position is not applied to another file that got the same device and inode number (an
/// inode reused after the old file was deleted).
///
/// It covers the first `min(size, 256)` bytes the file has when it is first read (256 as
/// Vector's original `fingerprint_bytes`), and records how many it covered, so the same bytes
/// can be checked later however much the file has grown:
///
///     bits 63…48: bytes covered (1…256)   bits 47…32: 0   bits 31…0: CRC-32 of those bytes
///
/// 0 means "no fingerprint" (the file was empty; a state saved by earlier versions for one file has none):
/// such a position is matched by device and inode alone. A file shorter than 256 bytes is not
/// made to wait until it is longer, as Filebeat does for 1,024 bytes
/// (https://www.elastic.co/docs/reference/beats/filebeat/filebeat-input-filestream) and Vector
/// for a whole first line (https://github.com/vectordotdev/vector/issues/11537): a log with one
/// short line must go out at once. The price: two files that start with the same few bytes and
/// reuse one inode are taken for one. 256 is Vector's former `fingerprint_bytes` default
/// (https://vector.dev/docs/reference/sources/file/).
///
/// Thread safety: stateless; callable from any thread.
enum FileFingerprint {
    /// The most bytes a fingerprint covers.
    static let maximumBytes = 256

    /// The fingerprint of `bytes` (the first bytes of a file); 0 for none.
    static func value(of bytes: UnsafeRawBufferPointer) -> UInt64 {
        guard !bytes.isEmpty else { return 0 }
        let covered = UInt64(min(bytes.count, maximumBytes))
        let crc = Checksum.crc32(UnsafeRawBufferPointer(rebasing: bytes[..<Int(covered)]))
        return covered << 48 | UInt64(crc)
    }

    /// How many bytes `fingerprint` covers (0 for none).
    static func coveredBytes(_ fingerprint: UInt64) -> Int {
        Int(fingerprint >> 48)
    }

    /// The fingerprint of `file` now, read into `scratch` (at least ``maximumBytes`` long).
    static func of(_ file: ReadOnlyFile, scratch: UnsafeMutableRawBufferPointer) throws(StreamUpError) -> UInt64 {
        let space = UnsafeMutableRawBufferPointer(rebasing: scratch[..<maximumBytes])
        let count = try readFully(file, into: space)
        return value(of: UnsafeRawBufferPointer(rebasing: space[..<count]))
    }

    /// Whether `file` starts with the bytes `fingerprint` was made of (always, for 0).
    static func matches(_ fingerprint: UInt64, _ file: ReadOnlyFile, scratch: UnsafeMutableRawBufferPointer) throws(StreamUpError) -> Bool {
        let covered = coveredBytes(fingerprint)
        guard covered > 0 else { return true }
        let space = UnsafeMutableRawBufferPointer(rebasing: scratch[..<covered])
        guard try readFully(file, into: space) == covered else { return false }
        return value(of: UnsafeRawBufferPointer(space)) == fingerprint
    }

    /// The first bytes of `file` (at most ``maximumBytes``): to check many fingerprints with
    /// one read (``matches(_:head:)``).
    static func head(of file: ReadOnlyFile) throws(StreamUpError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: maximumBytes)
        let read = bytes.withUnsafeMutableBytes { space in Result { () throws(StreamUpError) in try readFully(file, into: space) } }
        return Array(bytes[..<(try read.get())])
    }

    /// Whether a file whose first bytes are `head` starts with the bytes of `fingerprint`
    /// (always, for 0).
    static func matches(_ fingerprint: UInt64, head: [UInt8]) -> Bool {
        let covered = coveredBytes(fingerprint)
        guard covered > 0 else { return true }
        guard head.count >= covered else { return false }
        return head.withUnsafeBytes { value(of: UnsafeRawBufferPointer(rebasing: $0[..<covered])) } == fingerprint
    }

    /// Reads from offset 0 until `space` is full or the file ends; returns the count.
    private static func readFully(_ file: ReadOnlyFile, into space: UnsafeMutableRawBufferPointer) throws(StreamUpError) -> Int {
        var count = 0
        while count < space.count {
            let read = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: space[count...]), at: Int64(count))
            if read == 0 { break }
            count += read
        }
        return count
    }
}
