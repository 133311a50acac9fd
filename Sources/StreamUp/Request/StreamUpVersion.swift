/// The library's version, sent in `User-Agent` and printed by `streamup --version`.
///
/// Thread safety: a constant.
package enum StreamUpVersion {
    package static let current = "0.1.0"
}
