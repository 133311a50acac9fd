/// What became of an offer of free space to a writer.
///
/// Thread safety: a value type.
enum FillOutcome: Equatable {
    /// The writer put this many bytes (possibly 0) into the space.
    case wrote(Int)
    /// There was no space; the writer was not called.
    case full
    /// Writing has failed or ended; the writer was not called.
    case failed
}
