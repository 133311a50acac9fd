import Foundation
import StreamUpSystem

/// What a follower saves to resume after a restart: the followed path and its ``FollowPosition``,
/// as JSON (`{"device":…,"inode":…,"offset":…,"path":…}`).
///
/// Save it only once the bytes up to `offset` are safe (the server answered 2xx), then hand the
/// loaded state to ``FileFollower/init(path:startAt:state:readSize:)``. On start:
/// - the file at the path has the saved device and inode and is at least `offset` long: resume
///   at `offset`;
/// - same identity but shorter: it was truncated (copytruncate); start at 0;
/// - another identity (rotated while nobody followed): if the saved file is found in the same
///   directory (`path.1`, or any entry with the saved inode), finish it from `offset` first, then
///   read the file at the path from its start; if not found, that tail is lost and the file at
///   the path is read from its start.
///
/// A file that was deleted and re-created with a reused inode number, or truncated and refilled
/// past `offset`, while nobody followed, cannot be told from the saved one.
///
/// Thread safety: a value type; safe to pass anywhere.
package struct FollowState: Sendable, Hashable, Codable {
    /// The followed path, as given to the follower.
    package var path: String
    /// The device of the file that was being read.
    package var device: UInt64
    /// The inode of the file that was being read.
    package var inode: UInt64
    /// The offset in that file up to which bytes were delivered.
    package var offset: Int64
    /// The stream those bytes went into (`Streamup-Stream-Id`) and the stream offset that
    /// corresponds to ``offset``, when a ``ReliableUploader`` carried them: a restart whose
    /// spool already holds bytes past that offset skips them instead of reading them twice.
    package var streamID: String?
    package var streamOffset: Int?

    package init(path: String, device: UInt64, inode: UInt64, offset: Int64, streamID: String? = nil, streamOffset: Int? = nil) {
        self.path = path
        self.device = device
        self.inode = inode
        self.offset = offset
        self.streamID = streamID
        self.streamOffset = streamOffset
    }

    /// The state for `path` at `position`.
    package init(path: String, position: FollowPosition) {
        self.init(path: path, device: position.device, inode: position.inode, offset: position.offset)
    }

    /// The saved position.
    package var position: FollowPosition {
        FollowPosition(device: device, inode: inode, offset: offset)
    }

    /// Reads the state saved at `file`; nil when there is no such file (a first run).
    /// - Throws: ``StreamUpError`` `.io` when it cannot be read, `.invalidConfiguration` when it
    ///   is not a state file.
    package static func load(from file: String) throws -> FollowState? {
        guard let bytes = try AtomicFile.contents(at: file, throwing: StreamUpError.self) else { return nil }
        do {
            return try JSONDecoder().decode(FollowState.self, from: Data(bytes))
        } catch {
            throw StreamUpError(.invalidConfiguration, "\(file) is not a follow state file: \(error)")
        }
    }

    /// Saves the state at `file` atomically: a temporary file in the same directory, `fsync`,
    /// then `rename` over `file`. Readers see the old state or the new one, never a mix.
    /// - Throws: ``StreamUpError`` `.io` when the file cannot be written.
    package func save(to file: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json: Data
        do {
            json = try encoder.encode(self)
        } catch {
            throw StreamUpError(.invalidConfiguration, "cannot encode the follow state: \(error)")
        }
        try AtomicFile.replace(at: file, with: Array(json) + [0x0A], throwing: StreamUpError.self)
    }

    /// Where to resume in a file with `identity` and `size`: `offset` when it is the saved file
    /// and still that long, 0 when it is the saved file but shorter (truncated), nil when it is
    /// another file.
    func resumeOffset(for identity: FileIdentity, size: Int64) -> Int64? {
        guard identity == FileIdentity(device: device, inode: inode) else { return nil }
        return size >= offset ? max(offset, 0) : 0
    }

    /// The identity of the saved file.
    var identity: FileIdentity { FileIdentity(device: device, inode: inode) }
}
