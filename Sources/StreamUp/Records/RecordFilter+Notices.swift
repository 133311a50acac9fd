import StreamUpSystem

extension RecordFilter {
    /// The lines about records whose rules did not finish (``RecordFilter/masked``): the first at
    /// once, then at most one a minute, saying how many more there were since the last; the
    /// others are only counted. Lines go to the handler the command sets (none: counted only).
    ///
    /// Thread safety: guarded by the `state` mutex; the handler is called after it is left.
    package final class Notices: Sendable {
        private struct State {
            var handler: (@Sendable (String) -> Void)?
            /// When the last line went out (nil: none yet).
            var lastLine: ContinuousClock.Instant?
            /// Records masked since the last line without a line of their own.
            var unsaid = 0
        }

        /// The least time between two lines.
        static let interval = Duration.seconds(60)

        private let state = Mutex(State())

        package init() {}

        /// Sends the lines from now on to `handler` (called on the thread whose record was
        /// masked).
        package func setHandler(_ handler: @escaping @Sendable (String) -> Void) {
            state.withLock { $0.handler = handler }
        }

        /// Says `line` about one more masked record, or counts it when a line went out less
        /// than a minute ago.
        func post(_ line: String, now: ContinuousClock.Instant = .now) {
            let said: (handler: @Sendable (String) -> Void, line: String)? = state.withLock { state in
                if let last = state.lastLine, now - last < Notices.interval {
                    state.unsaid += 1
                    return nil
                }
                let earlier = state.unsaid
                state.unsaid = 0
                state.lastLine = now
                guard let handler = state.handler else { return nil }
                return (handler, earlier > 0 ? "\(line) (and \(earlier) more records masked since the last such line)" : line)
            }
            if let said { said.handler(said.line) }
        }
    }
}
