import Foundation

/// Carries one of the library's own body streams across threads.
///
/// Foundation's `Stream` opts out of `Sendable` because its own subclasses keep unguarded state.
/// ``BodyInputStream`` keeps its status in a `Mutex` and is read by one thread (its source, a
/// window or a live `ReplayBuffer`, has its own lock), so a reference to it may be shared. This
/// wrapper says so in one place instead of at every use.
///
/// Thread safety: immutable; only ever wraps a body stream.
struct StreamReference<S: Stream>: @unchecked Sendable {
    let value: S
    init(_ value: S) { self.value = value }
}
