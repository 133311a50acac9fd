import Foundation

extension StreamUploader {
    /// How far an upload has got. Counters only grow.
    ///
    /// Thread safety: a value type snapshot.
    public struct Progress: Sendable, Equatable {
        /// Bytes the producer has written into the buffer.
        public let bytesProduced: Int
        /// Bytes the upload task has taken from the buffer to send.
        public let bytesSent: Int
        /// Bytes waiting in the buffer (`bytesProduced - bytesSent`).
        public var bytesBuffered: Int { bytesProduced - bytesSent }
    }
}

/// The package's name for ``StreamUploader/Progress``.
package typealias UploadProgress = StreamUploader.Progress
