import Foundation
import StreamUpHTTP

extension StreamUploader {
    /// Which failures are worth another try, and how long to wait before it.
    ///
    /// Connection failures (refused, reset, lost, timed out, DNS) and the answers 408, 429 and 5xx
    /// are retried; `Retry-After` (seconds) is honoured up to `maxDelay` (a server cannot make a
    /// client wait longer than its own backoff would, nor past `maxRetryTime`). Any other 4xx is fatal: the request itself
    /// is wrong and sending it again would only repeat the refusal. Waits grow exponentially with
    /// full jitter (a random wait between zero and the exponential bound), capped.
    ///
    /// Thread safety: a value type.
    public struct RetryPolicy: Sendable, Equatable {
        /// Most retries in a row without progress (nil: for ever, for daemons).
        public var maxRetries: Int?
        /// Give up once failures have gone on this long without progress (nil: no limit).
        public var maxRetryTime: Duration?
        /// The first backoff bound; it doubles per failure up to `maxDelay`.
        public var baseDelay: Duration = .milliseconds(250)
        public var maxDelay: Duration = .seconds(30)
        /// A lower bound than `maxDelay` for the wait after an attempt that never reached the
        /// receiver: the connection was refused, the name did not resolve, or the connection
        /// failed before any byte of the request's body went out (nil: `maxDelay`). Such an
        /// attempt costs a connection attempt and carries nothing, so it can be made often:
        /// with 1 s, delivery resumes within about a second of a receiver's return. An answer
        /// (429, 5xx, with or without `Retry-After`) and a connection that broke while it
        /// carried a body keep `maxDelay`: the receiver is up and asks for less.
        public var maxReconnectDelay: Duration?
        /// Answers retried (default 408, 429 and every 5xx).
        public var retryableStatuses: Set<Int> = Set([408, 429]).union(500...599)

        public init(maxRetries: Int? = 10, maxRetryTime: Duration? = nil) {
            self.maxRetries = maxRetries
            self.maxRetryTime = maxRetryTime
        }

        /// Never retry.
        public static let none = RetryPolicy(maxRetries: 0)

        /// Whether an answer with `status` is worth another try.
        package func isRetryable(status: Int) -> Bool {
            retryableStatuses.contains(status)
        }

        /// Whether a failure without an answer is worth another try.
        package func isRetryable(_ error: StreamUpError) -> Bool {
            error.code == .transport
        }

        /// The wait before retry number `attempt` (1 for the first), unless the server said
        /// how long in `retryAfter` (then that, at most `maxDelay`); after an attempt that never
        /// reached the receiver (`reached` false), at most `maxReconnectDelay`.
        func delay(
            attempt: Int, retryAfter: String?, reached: Bool = true, random: (Double) -> Double = { Double.random(in: 0...$0) }
        ) -> Duration {
            if let retryAfter, let seconds = Int(retryAfter.trimmingCharacters(in: .whitespaces)), seconds >= 0 {
                return min(.seconds(seconds), maxDelay)
            }
            let cap = reached ? maxDelay : min(maxReconnectDelay ?? maxDelay, maxDelay)
            let bound = min(baseDelay * (1 << min(attempt - 1, 20)), cap)
            return .milliseconds(Int64(random(bound.seconds) * 1000))
        }
    }
}

/// The package's name for ``StreamUploader/RetryPolicy``.
package typealias RetryPolicy = StreamUploader.RetryPolicy
