import Foundation

/// A producer whose sources can be read again from a position (files), so that a
/// ``StreamUploader`` with a state file can make delivery exactly once across restarts: it
/// saves where each source stands once the receiver has acknowledged the bytes (with a spool:
/// once they are in the spool), and hands those positions back on the next start.
///
/// Implementation requirements:
/// - Write source bytes with their `SourceMark` (``StreamWriter`` and the blocking writer take
///   one), so the uploader can map stream offsets back to source positions.
/// - In ``resume(from:)``, continue each source at its position instead of the usual start.
/// - Optionally, in ``reportSources(to:)``, keep the closure and report each source you begin
///   or stop following (``SourceChange``): the saved state then knows files of which nothing
///   was sent yet (one started at its end), and forgets files gone for long. The default does
///   nothing (one file, known by its path, needs none of it).
/// - Optionally, in ``timeRecords(with:)``, give each source's `RecordFormatter` the times and
///   the source (``RecordFormatter/sourceTimes``) and pass each line's source offset when it
///   is formatted: lines read again after a restart then keep their times. The default keeps
///   the clock's times.
///
/// Thread safety: called from the uploader's task; implementations are `Sendable`.
package protocol PositionedProducer: Producer {
    /// Called once, before `produce`, with the saved positions (the most recently read last;
    /// empty on a first run) and when they were saved (nil: unknown).
    func resume(from positions: [SourcePosition], savedAt: Date?)
    /// The path `source` was read at, for the saved state.
    func path(of source: SourceID) -> String?
    /// The path to save with `source`'s position `position` (what the state file keeps to find
    /// that position again); by default ``path(of:)``. Asked with the positions being saved, which
    /// only move forward.
    func path(of source: SourceID, at position: Int64) -> String?
    /// Called once, before `produce` (after ``resume(from:)``), with where to report changes in
    /// the set of followed sources; `report` may be called from any thread and never blocks
    /// for long (the state file is written later, on the uploader's queue).
    func reportSources(to report: @escaping @Sendable (SourceChange) -> Void)
    /// Called once, before `produce`, when the uploader keeps the times of the records in its
    /// state file: the records made from lines get their times from `times`
    /// (``RecordFormatter/sourceTimes``), so lines read again after a restart keep theirs.
    func timeRecords(with times: SourceTimes)
}

extension PositionedProducer {
    /// The path `source` was read at.
    package func path(of source: SourceID, at position: Int64) -> String? { path(of: source) }
    /// Reports nothing.
    package func reportSources(to report: @escaping @Sendable (SourceChange) -> Void) {}
    /// Times records by the clock alone.
    package func timeRecords(with times: SourceTimes) {}
}
