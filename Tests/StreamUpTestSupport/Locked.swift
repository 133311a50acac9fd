import Foundation

/// A value behind an `NSLock`, for test helpers that threads share.
///
/// Not `Mutex`: on Linux, `Mutex` locks inside the Synchronization library, which is not built
/// with ThreadSanitizer, so under `--sanitize=thread` (`.ci/sanitizers`) every value it guards
/// is reported as a race. `NSLock` is a pthread mutex, which ThreadSanitizer understands.
///
/// Thread safety: `value` is read and written only inside `lock`; callable from any thread.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    public init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the value, holding the lock. `body` must not call out to code that
    /// could wait for another thread (a callback, a continuation).
    public func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
