/// A change in the set of sources a ``PositionedProducer`` follows, reported to the uploader
/// that keeps its state file (``PositionedProducer/reportSources(to:)``), apart from the bytes
/// it writes: so the saved state knows every followed file (also one started at its end, of
/// which nothing was sent yet), and can forget files that are gone.
///
/// Thread safety: a value type.
package enum SourceChange: Sendable, Equatable {
    /// The producer follows this source from this position on. The saved state records the
    /// position if it has none for the source (it never moves a known source back), and
    /// marks the source present again.
    case following(SourcePosition)
    /// The producer no longer follows this source (the file is gone, or was never found
    /// again after a restart). The saved state keeps its position and forgets it once it has
    /// been gone for the uploader's ``StreamUploader/Options/forgetSourcesAfter``.
    case stopped(SourceID)
}
