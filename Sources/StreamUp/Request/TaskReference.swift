import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Carries a URLSession task to another queue, to cancel it there: `cancel()` waits for
/// URLSession's shared work queue, which a body read may be holding (DesignNotes, platform fact 3), so no
/// caller should wait for it.
///
/// Thread safety: `URLSessionTask` is thread-safe (its state lives on URLSession's work queue)
/// but does not say so to the compiler; this wrapper is the one place that vouches for it.
struct TaskReference<Task: URLSessionTask>: @unchecked Sendable {
    let value: Task
    init(_ value: Task) { self.value = value }

    /// Cancels the task from a global queue, without waiting.
    func cancelSoon() {
        DispatchQueue.global().async { value.cancel() }
    }
}
