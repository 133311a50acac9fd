import Foundation

/// How far an upload has got. Counters only grow.
///
/// Thread safety: a value type snapshot.
public struct UploadProgress: Sendable, Equatable {
    /// Bytes the producer has written into the buffer.
    public let bytesProduced: Int
    /// Bytes the upload task has taken from the buffer to send.
    public let bytesSent: Int
    /// Bytes waiting in the buffer (`bytesProduced - bytesSent`).
    public var bytesBuffered: Int { bytesProduced - bytesSent }
}
