import Foundation

/// Where a resumable upload lives, and the stream offset of its first byte, so that a restarted
/// streamup can go on appending to it (kept in the spool's record).
///
/// Thread safety: a value type.
package struct ResumableUploadReference: Codable, Sendable, Equatable {
    /// The upload URL the server gave in `Location`.
    package var url: String
    /// The stream offset of the upload's byte 0.
    package var base: Int
    /// The target the upload was created at; a run with another target starts a new upload.
    package var target: String?

    package init(url: String, base: Int, target: String?) {
        self.url = url
        self.base = base
        self.target = target
    }
}
