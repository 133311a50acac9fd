import Foundation

/// Where a ``FileFollower`` is: the identity of the file it reads (device and inode) and the
/// offset in that file up to which bytes have gone into the writer.
///
/// Thread safety: a value type; safe to pass anywhere.
package struct FollowPosition: Sendable, Hashable, Codable {
    /// The device of the file being read (`st_dev`).
    package var device: UInt64
    /// The inode of the file being read (`st_ino`).
    package var inode: UInt64
    /// The offset in that file up to which bytes have been written into the writer.
    package var offset: Int64

    package init(device: UInt64, inode: UInt64, offset: Int64) {
        self.device = device
        self.inode = inode
        self.offset = offset
    }
}
