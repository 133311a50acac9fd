import CZlib

/// CRC-32 (zlib's, the one gzip uses), for the spool's record of what it wrote.
///
/// Thread safety: stateless.
enum Checksum {
    /// The CRC-32 of `bytes`, continuing from `seed` (the CRC of what came before; 0 to start).
    static func crc32(_ bytes: UnsafeRawBufferPointer, continuing seed: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return seed }
        var crc = UInt(seed)
        var offset = 0
        while offset < bytes.count {
            // zlib takes a 32-bit length.
            let count = min(bytes.count - offset, Int(UInt32.max))
            crc = CZlib.crc32(crc, base.advanced(by: offset).assumingMemoryBound(to: UInt8.self), UInt32(count))
            offset += count
        }
        return UInt32(truncatingIfNeeded: crc)
    }
}
