/// Where the bytes of one write came from, so that an acknowledged stream offset can be turned
/// back into a position in the source (a file offset) to continue from after a restart.
///
/// Thread safety: a value type.
package struct SourceMark: Equatable, Sendable {
    /// The source the bytes were read from.
    package var source: SourceID
    /// The source position of the write's first byte.
    package var start: Int64
    /// The source position just after the write; nil when the bytes are the source's bytes as
    /// they are (so every stream offset inside the write maps to a source position).
    package var end: Int64?

    package init(source: SourceID, start: Int64, end: Int64?) {
        self.source = source
        self.start = start
        self.end = end
    }

    /// Bytes copied from `source` as they are, starting at `position`.
    package static func verbatim(_ source: SourceID, from position: Int64) -> SourceMark {
        SourceMark(source: source, start: position, end: nil)
    }
}
