import Synchronization

/// A value behind a mutex, for handing results between threads.
///
/// Thread safety: every access takes the mutex; callable from any thread.
final class LockedValue<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) {
        mutex = Mutex(value)
    }

    func get() -> Value {
        mutex.withLock { $0 }
    }

    func set(_ value: Value) {
        mutex.withLock { $0 = value }
    }

    func update<Result: Sendable>(_ change: (inout Value) -> Result) -> Result {
        mutex.withLock { change(&$0) }
    }
}
