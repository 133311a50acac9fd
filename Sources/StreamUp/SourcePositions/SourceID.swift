/// The identity of a source a producer reads and can read again from a position: a file, known
/// by its device and inode, plus a fingerprint of its first bytes so that a file re-created with
/// a reused inode number is not taken for the old one (0 when not computed).
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
}
