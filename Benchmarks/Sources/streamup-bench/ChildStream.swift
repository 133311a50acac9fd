/// Where one of a child's standard descriptors comes from.
///
/// Thread safety: an immutable value.
enum ChildStream: Sendable {
    /// Inherit the bench's descriptor.
    case inherit
    /// Duplicate this descriptor of the bench (which keeps its own copy).
    case descriptor(CInt)
    /// Open this path (write-only, created and truncated for output).
    case file(String)
}
