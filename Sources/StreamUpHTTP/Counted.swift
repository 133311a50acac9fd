/// A count and its noun for a message, in the right number: `1 byte`, `0 bytes`, `2 entries`.
/// - Parameters:
///   - singular: the noun for one ("byte").
///   - plural: the noun for any other count; nil adds an "s" to `singular`.
///
/// Thread safety: a pure function.
package func counted(_ count: Int, _ singular: String, _ plural: String? = nil) -> String {
    "\(count) \(count == 1 ? singular : plural ?? singular + "s")"
}
