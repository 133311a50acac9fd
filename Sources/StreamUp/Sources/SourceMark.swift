/// Where the bytes of one write came from, so that an acknowledged stream offset can be turned
/// back into a position in the source (a file offset) to continue from after a restart.
///
/// Thread safety: a value type.
struct SourceMark: Equatable, Sendable {
    /// The source the bytes were read from.
    var source: SourceID
    /// The source position of the write's first byte.
    var start: Int64
    /// The source position just after the write; nil when the bytes are the source's bytes as
    /// they are (so every stream offset inside the write maps to a source position).
    var end: Int64?

    /// Bytes copied from `source` as they are, starting at `position`.
    static func verbatim(_ source: SourceID, from position: Int64) -> SourceMark {
        SourceMark(source: source, start: position, end: nil)
    }
}
