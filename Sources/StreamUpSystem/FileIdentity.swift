/// Which file a path or descriptor refers to: the device and inode from `stat(2)`.
///
/// Two names with the same identity are the same file; a rotated file keeps its identity under
/// its new name, a re-created one gets a new identity.
///
/// Thread safety: a value type that is never shared.
package struct FileIdentity: Hashable, Sendable {
    package let device: UInt64
    package let inode: UInt64

    package init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}
