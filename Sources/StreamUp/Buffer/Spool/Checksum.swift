import CZlib

/// CRC-32 (zlib's `crc32_z`, the checksum gzip uses), for the spool's record of what it wrote.
///
/// Thread safety: stateless.
package enum Checksum {
    /// The CRC-32 of `bytes`, continuing from `seed` (the CRC of what came before; 0 to start).
    package static func crc32(_ bytes: UnsafeRawBufferPointer, continuing seed: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return seed }
        return UInt32(truncatingIfNeeded: crc32_z(uLong(seed), base.assumingMemoryBound(to: Bytef.self), bytes.count))
    }

    /// The CRC-32 of `bytes`, continuing from `seed`.
    package static func crc32(_ bytes: [UInt8], continuing seed: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { crc32($0, continuing: seed) }
    }
}
