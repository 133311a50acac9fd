/// The identity of a source a producer reads and can read again from a position: a file, known
/// by its device and inode, plus a fingerprint of its first bytes so that a file re-created with
/// a reused inode number is not taken for the old one (0 when not computed); or a sequence of
/// numbered entries that never change (``sequence(_:)``: a journal's sequence-number id).
///
/// Thread safety: a value type.
package struct SourceID: Hashable, Sendable, Codable {
    package var device: UInt64
    package var inode: UInt64
    package var fingerprint: UInt64

    package init(device: UInt64, inode: UInt64, fingerprint: UInt64 = 0) {
        self.device = device
        self.inode = inode
        self.fingerprint = fingerprint
    }

    /// The ``device`` of every sequence source ("jrnl"): no file system has it.
    package static let sequenceDevice: UInt64 = 0x6a72_6e6c

    /// The source whose positions are the sequence numbers of the entries named `name` (a
    /// systemd journal's sequence-number id): its inode is an FNV-1a hash of the name, the same
    /// in every run (Swift's `hashValue` is seeded per process).
    package static func sequence(_ name: String) -> SourceID {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return SourceID(device: sequenceDevice, inode: hash)
    }

    /// Whether a position of this source names the same entry in every run: a sequence number
    /// does (an entry is never rewritten), a file offset does not (a file truncated and written
    /// again holds other lines there), so a record named after its position needs no time then.
    package var isSequence: Bool { device == Self.sequenceDevice }
}
