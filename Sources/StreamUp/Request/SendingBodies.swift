import StreamUpSystem

/// The bodies of the requests out now, and the furthest stream offset earlier requests handed
/// to the connection: how far the stream has gone out, acknowledged or not (`--metrics`).
///
/// Thread safety: guarded by its `Mutex`; each body's own lock is taken outside it.
final class SendingBodies: Sendable {
    private struct State {
        /// The bodies out, by their first stream offset.
        var bodies: [Int: WindowBody] = [:]
        /// The furthest stream offset an ended request's body reached.
        var sentEnd = 0
    }
    private let state = Mutex(State())

    /// `body`'s request starts.
    func began(_ body: WindowBody) {
        state.withLock { $0.bodies[body.range.lowerBound] = body }
    }

    /// `body`'s request ended: what URLSession read of it counts.
    func ended(_ body: WindowBody) {
        let reached = min(body.range.upperBound, body.range.lowerBound + body.bytesSent)
        state.withLock { state in
            state.bodies[body.range.lowerBound] = nil
            state.sentEnd = max(state.sentEnd, reached)
        }
    }

    /// The furthest stream offset any request's body reached as URLSession read it (a
    /// compressed body counts its compressed bytes).
    var furthest: Int {
        let (sentEnd, bodies) = state.withLock { ($0.sentEnd, $0.bodies) }
        let live = bodies.values.map { min($0.range.upperBound, $0.range.lowerBound + $0.bytesSent) }.max() ?? 0
        return max(sentEnd, live)
    }
}
