import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The accept thread's work: wait in `poll(2)` on the listener and the wake pipe, accept each
/// connection, admit it to the ``ConnectionRegistry`` (which may shed the connection that has
/// waited longest for its request head to make room) and start its thread, or turn it away with
/// `503` when every slot holds a request. Wakes at least once a second to let expired resumable
/// uploads go. Returns when the wake pipe becomes readable, and closes the listener on the way out.
///
/// Thread safety: confined to the accept thread; not Sendable (it owns the listener).
struct AcceptLoop: ~Copyable {
    private let listener: Socket
    private let wake: WakePipe
    private let context: SinkServerContext

    /// Takes ownership of `listener`.
    init(listener: consuming Socket, wake: WakePipe, context: SinkServerContext) {
        self.listener = listener
        self.wake = wake
        self.context = context
    }

    consuming func run() {
        while true {
            switch waitForActivity() {
            case .connection:
                acceptOne()
            case .quiet:
                break
            case .stop:
                listener.close()
                return
            }
            // Expired resumable uploads go even when no request comes (the sweep is rate-limited).
            context.uploads.sweepExpired()
        }
    }

    private enum Activity {
        case connection
        /// Nothing happened for a second (or `poll` failed and the loop backed off).
        case quiet
        case stop
    }

    /// Blocks until the listener or the wake pipe is readable, or a second passes.
    private func waitForActivity() -> Activity {
        var fds = [
            pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wake.readEnd, events: Int16(POLLIN), revents: 0),
        ]
        let count = nfds_t(fds.count)
        do {
            _ = try SystemCall.runBlocking("poll") { poll(&fds, count, 1_000) }
        } catch {
            backOff()
            return context.isStopping ? .stop : .quiet
        }
        if fds[1].revents != 0 || context.isStopping { return .stop }
        return fds[0].revents != 0 ? .connection : .quiet
    }

    private func acceptOne() {
        var peer = SocketAddress()
        let accepted: Socket?
        do {
            accepted = try listener.accept(peer: &peer)
        } catch {
            // EMFILE, ENFILE, ENOBUFS…: the pending connection stays queued, so back off
            // instead of spinning on a listener that stays readable.
            backOff()
            return
        }
        guard let connection = accepted else { return }
        let peerText = peer.hostAndPort
        switch context.registry.admit(connection.descriptor) {
        case .admitted(let slot, _):
            let descriptor = connection.release()
            let context = self.context
            context.spawn(name: "sink \(peerText)") {
                SinkConnection.serve(descriptor: descriptor, slot: slot, peer: peerText, context: context)
            }
        case .full:
            turnAway(connection, peer: peerText)
        case .closed:
            connection.close()
        }
    }

    /// Waits 50 ms, or less if the server is stopped meanwhile.
    private func backOff() {
        var fds = [pollfd(fd: wake.readEnd, events: Int16(POLLIN), revents: 0)]
        _ = try? SystemCall.run("poll") { poll(&fds, 1, 50) }
    }

    /// Answers `503` without reading the request, reports it, and closes.
    private func turnAway(_ connection: consuming Socket, peer: String) {
        let reason = "too many connections (limit \(context.configuration.maxConnections))"
        let response = HTTPResponse.json(status: 503, body: HTTPResponse.error(status: 503, reason: reason), close: true)
        try? connection.send(response, flags: CInt(MSG_DONTWAIT))
        connection.shutdown(CInt(SHUT_WR))
        connection.close()
        context.report(
            SinkRequestEvent(
                sequence: context.nextSequence(), method: "", path: "", version: "",
                headers: [], trailers: [], bodyByteCount: 0, sha256: nil, body: nil, storedFile: nil,
                duration: .zero, status: 503, isComplete: false, peer: peer, failure: reason))
    }
}
