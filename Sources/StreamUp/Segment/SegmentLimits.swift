/// How big and how long one segment may be.
///
/// Thread safety: a value type.
struct SegmentLimits: Equatable, Sendable {
    var maxBytes: Int
    var maxDuration: Duration
    /// The most records in one segment (nil: no limit).
    var maxRecords: Int? = nil
}
