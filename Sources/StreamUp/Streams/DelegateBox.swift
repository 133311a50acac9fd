import Foundation
import StreamUpSystem

/// A weak stream delegate that can be read and replaced from any thread.
///
/// Thread safety: guarded by `lock`; callable from any thread.
final class DelegateBox: Sendable {
    private struct WeakDelegate: @unchecked Sendable {
        // Only read or replaced under `lock`; the delegate itself is called by the stream's target.
        weak var value: StreamDelegate?
    }
    private let lock = Mutex(WeakDelegate())

    var delegate: StreamDelegate? {
        get { lock.withLock { $0.value } }
        set { lock.withLock { $0.value = newValue } }
    }
}
