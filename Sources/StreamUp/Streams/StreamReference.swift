import Foundation

/// Carries one of the library's own streams (the bound pair's, or a segment body's) across
/// threads.
///
/// Foundation's `Stream` opts out of `Sendable` because its own subclasses keep unguarded state.
/// ``BoundInputStream`` and ``BoundOutputStream`` keep every mutable field in
/// `BoundStreamCore.state` behind its lock (and their delegate in a `Mutex`), so a reference to
/// them may be shared; ``BodyInputStream`` keeps its status in a `Mutex` and is read by one
/// thread. This wrapper says so in one place instead of at every use.
///
/// Thread safety: immutable; only ever wraps a bound stream or a body stream.
struct StreamReference<S: Stream>: @unchecked Sendable {
    let value: S
    init(_ value: S) { self.value = value }
}
