/// A producer whose sources can be read again from a position (files), so that a
/// ``ReliableUploader`` with a state file can make delivery exactly once across restarts: it
/// saves where each source stands once the receiver has acknowledged the bytes (with a spool:
/// once they are in the spool), and hands those positions back on the next start.
///
/// Implementation requirements:
/// - Write source bytes with their ``SourceMark`` (``StreamWriter`` and the blocking writer take
///   one), so the uploader can map stream offsets back to source positions.
/// - In ``resume(from:)``, continue each source at its position instead of the usual start.
///
/// Thread safety: called from the uploader's task; implementations are `Sendable`.
public protocol PositionedProducer: Producer {
    /// Called once, before `produce`, with the saved positions (the most recently read last);
    /// empty on a first run.
    func resume(from positions: [SourcePosition])
    /// The path `source` was read at, for the saved state.
    func path(of source: SourceID) -> String?
}
