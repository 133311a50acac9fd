/// The identity of a source a producer reads and can read again from a position: a file, known
/// by its device and inode, plus a fingerprint of its first bytes so that a file re-created with
/// a reused inode number is not taken for the old one (0 when not computed).
///
/// Thread safety: a value type.
public struct SourceID: Hashable, Sendable, Codable {
    public var device: UInt64
    public var inode: UInt64
    public var fingerprint: UInt64

    public init(device: UInt64, inode: UInt64, fingerprint: UInt64 = 0) {
        self.device = device
        self.inode = inode
        self.fingerprint = fingerprint
    }
}
