/// How far a producer has got in one source: its identity, the path it was read at, and the
/// offset of the next byte to read.
///
/// Thread safety: a value type.
package struct SourcePosition: Hashable, Sendable, Codable {
    package var source: SourceID
    /// The path the source had when last read (a rotated file may have moved since).
    package var path: String
    /// The offset in the source up to which its bytes are safe.
    package var offset: Int64
    /// When the producer stopped following the source (Unix time, seconds); nil while it is
    /// followed. A state file forgets sources gone for longer than its uploader's
    /// ``StreamUploader/Options/forgetSourcesAfter``.
    package var goneSince: Int64?

    package init(source: SourceID, path: String, offset: Int64, goneSince: Int64? = nil) {
        self.source = source
        self.path = path
        self.offset = offset
        self.goneSince = goneSince
    }
}
