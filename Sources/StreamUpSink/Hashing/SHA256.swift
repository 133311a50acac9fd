/// Incremental SHA-256 (FIPS 180-4), written for the sink so it needs no package or CryptoKit.
///
/// Feed bytes with ``update(_:)-(UnsafeRawBufferPointer)`` in pieces of any size, then call
/// ``finalize()``. Whole 64-byte blocks are compressed straight from the caller's memory; only a
/// trailing partial block is copied into an inline 64-byte buffer, so hashing never allocates.
///
/// ```swift
/// var hasher = SHA256()
/// hasher.update(Array("abc".utf8))
/// let hex = SHA256.hex(hasher.finalize())   // "ba7816bf…"
/// ```
///
/// Thread safety: a value type that is never shared; each hasher belongs to one caller.
public struct SHA256: Sendable {
    /// The digest size in bytes.
    public static let digestByteCount = 32

    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a,
        0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19
    )
    /// A partial block (fewer than 64 bytes) waiting for more input.
    private var pending: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
    private var pendingCount = 0
    private var totalByteCount: UInt64 = 0

    /// A hasher that has seen no bytes yet.
    public init() {}

    /// Hashes `bytes` in one go.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// Lower-case hexadecimal text of `digest`.
    public static func hex(_ digest: [UInt8]) -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(digest.count * 2)
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Adds `bytes` to the message.
    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Adds `bytes` to the message.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard var input = bytes.baseAddress, bytes.count > 0 else { return }
        var remaining = bytes.count
        totalByteCount &+= UInt64(remaining)

        if pendingCount > 0 {
            let take = min(64 - pendingCount, remaining)
            let offset = pendingCount
            withUnsafeMutableBytes(of: &pending) { block in
                (block.baseAddress! + offset).copyMemory(from: input, byteCount: take)
            }
            pendingCount += take
            input += take
            remaining -= take
            guard pendingCount == 64 else { return }
            let block = pending
            withUnsafeBytes(of: block) { compress(blocks: $0.baseAddress!, count: 1) }
            pendingCount = 0
        }

        let wholeBlocks = remaining / 64
        if wholeBlocks > 0 {
            compress(blocks: input, count: wholeBlocks)
            input += wholeBlocks * 64
            remaining -= wholeBlocks * 64
        }

        if remaining > 0 {
            let count = remaining
            withUnsafeMutableBytes(of: &pending) { block in
                block.baseAddress!.copyMemory(from: input, byteCount: count)
            }
            pendingCount = count
        }
    }

    /// Pads the message and returns the 32-byte digest. The hasher is consumed.
    public consuming func finalize() -> [UInt8] {
        let bitLength = totalByteCount &* 8
        var padding = [UInt8](repeating: 0, count: 72)
        padding[0] = 0x80
        // Pad to 56 mod 64, then the 64-bit big-endian bit length.
        let padCount = pendingCount < 56 ? 56 - pendingCount : 120 - pendingCount
        for index in 0..<8 {
            padding[padCount + index] = UInt8(truncatingIfNeeded: bitLength >> (56 - 8 * UInt64(index)))
        }
        let total = totalByteCount
        padding.withUnsafeBytes { update(UnsafeRawBufferPointer(rebasing: $0[0..<(padCount + 8)])) }
        totalByteCount = total
        precondition(pendingCount == 0, "SHA-256 padding left a partial block")

        let words = [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7]
        var digest = [UInt8]()
        digest.reserveCapacity(SHA256.digestByteCount)
        for word in words {
            digest.append(UInt8(truncatingIfNeeded: word >> 24))
            digest.append(UInt8(truncatingIfNeeded: word >> 16))
            digest.append(UInt8(truncatingIfNeeded: word >> 8))
            digest.append(UInt8(truncatingIfNeeded: word))
        }
        return digest
    }

    /// Compresses `count` consecutive 64-byte blocks starting at `blocks` into `state`.
    private mutating func compress(blocks: UnsafeRawPointer, count: Int) {
        var (h0, h1, h2, h3, h4, h5, h6, h7) = state
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { schedule in
            let w = schedule.baseAddress!
            SHA256.roundConstants.withUnsafeBufferPointer { constants in
                let k = constants.baseAddress!
                var block = blocks
                for _ in 0..<count {
                    var t = 0
                    while t < 16 {
                        w[t] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: t &* 4, as: UInt32.self))
                        t &+= 1
                    }
                    while t < 64 {
                        let x = w[t &- 15]
                        let y = w[t &- 2]
                        let s0 = rotate(x, 7) ^ rotate(x, 18) ^ (x &>> 3)
                        let s1 = rotate(y, 17) ^ rotate(y, 19) ^ (y &>> 10)
                        w[t] = w[t &- 16] &+ s0 &+ w[t &- 7] &+ s1
                        t &+= 1
                    }
                    var a = h0
                    var b = h1
                    var c = h2
                    var d = h3
                    var e = h4
                    var f = h5
                    var g = h6
                    var h = h7
                    t = 0
                    while t < 64 {
                        let sum1 = rotate(e, 6) ^ rotate(e, 11) ^ rotate(e, 25)
                        let choice = (e & f) ^ (~e & g)
                        let temp1 = h &+ sum1 &+ choice &+ k[t] &+ w[t]
                        let sum0 = rotate(a, 2) ^ rotate(a, 13) ^ rotate(a, 22)
                        let majority = (a & b) ^ (a & c) ^ (b & c)
                        let temp2 = sum0 &+ majority
                        h = g
                        g = f
                        f = e
                        e = d &+ temp1
                        d = c
                        c = b
                        b = a
                        a = temp1 &+ temp2
                        t &+= 1
                    }
                    h0 &+= a
                    h1 &+= b
                    h2 &+= c
                    h3 &+= d
                    h4 &+= e
                    h5 &+= f
                    h6 &+= g
                    h7 &+= h
                    block += 64
                }
            }
        }
        state = (h0, h1, h2, h3, h4, h5, h6, h7)
    }

    private static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]
}

@inline(__always)
private func rotate(_ value: UInt32, _ count: UInt32) -> UInt32 {
    (value &>> count) | (value &<< (32 &- count))
}
