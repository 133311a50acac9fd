import Foundation
import StreamUpSystem

/// A local HTTP/1.1 server that receives long uploads (chunked or with `Content-Length`),
/// stores or hashes each body as it streams in, answers with a JSON summary and reports every
/// request as a ``SinkRequestEvent``.
///
/// ```swift
/// let summary = try await SinkServer.withRunning(SinkConfiguration(outputDirectory: "/tmp/in")) { server in
///     try await upload(to: server.url)          // http://127.0.0.1:PORT/
///     return server.requests.last
/// }
/// ```
///
/// - `init` binds and listens (so ``port`` is known at once); ``start()`` starts accepting;
///   ``stop()`` closes the listener and every connection and waits until all of the server's
///   threads have finished. The scoped ``withRunning(_:onEvent:isolation:_:)`` always stops.
/// - Threading: one accept thread (`poll(2)` on the listener and a wake pipe) and one thread per
///   connection with blocking sockets; `SO_RCVTIMEO`/`SO_SNDTIMEO` implement the idle timeout,
///   the request-head deadline and the minimum body rate (``ConnectionDeadlines``).
///   See ``SinkConnection`` for the per-connection memory.
/// - Connection limit: at ``SinkConfiguration/maxConnections`` open connections, a new one takes
///   the place of the connection that has waited longest for a request head (which is answered
///   `503`, or closed silently if idle between requests); when every connection is inside a
///   request, the new one is answered `503` with `Connection: close`, reported, and closed.
///   See ``ConnectionRegistry``.
/// - Storage: see ``BodyStorage`` for file names; a body that did not arrive in full keeps the
///   `.partial` suffix and its event has `isComplete == false`.
/// - Events: `onEvent` is called on the connection's thread (the accept thread for `503`s),
///   concurrently for different connections, before the response is sent. Keep it short.
/// - Streams: requests with `Streamup-Stream-Id` and `Streamup-Offset` are merged, without
///   duplicates, into one file per stream holding the stream's gapless start; a body past its end
///   is held aside (answered `200`, bounded, kept across restarts) until the gap fills; see
///   ``StreamStore``.
/// - Resumable uploads (draft-ietf-httpbis-resumable-upload, interop versions 6 and 8): requests
///   carrying `Upload-Draft-Interop-Version` create (`POST` with `Upload-Complete`), append to
///   (`PATCH`), query (`HEAD`) and cancel (`DELETE`) uploads at `/uploads/TOKEN`; bytes are
///   stored as they arrive, so a cut connection loses nothing the sink received. Uploads live
///   in memory only, at most ``SinkConfiguration/maxUploads`` at once; idle ones expire after
///   ``SinkConfiguration/uploadExpiry`` and hold no descriptor. See ``ResumableRequest``,
///   ``ResumableRequestHandler`` and ``ResumableUploads``.
/// - Hostile clients: every limit is in ``SinkConfiguration``; each answers with a status and
///   closes the connection, and none lets a client make the sink allocate, open or wait in
///   proportion to what the client claims.
/// - Faults: ``SinkConfiguration/faults`` makes the server misbehave on purpose; see ``SinkFaults``.
/// - Responder (package API): a server made with a `SinkResponder` answers every request with
///   it instead of storing anything, under the same limits (`streamup --metrics`).
/// - SIGPIPE: never raised; see ``Socket``.
///
/// Thread safety: guarded by the `lifecycle` mutex; every member is callable from any thread.
public final class SinkServer: Sendable {
    private enum Lifecycle {
        /// Bound and listening; the server owns the listener descriptor.
        case bound(listener: CInt)
        /// The accept thread owns the listener.
        case running
        case stopped
    }

    /// The configuration the server was created with.
    public let configuration: SinkConfiguration
    /// The bound port (the ephemeral one when ``SinkConfiguration/port`` was 0).
    public let port: UInt16
    /// The bound numeric host (`127.0.0.1`, `::1`, `0.0.0.0`).
    public let boundHost: String

    private let context: SinkServerContext
    private let wake: WakePipe
    private let lifecycle: Mutex<Lifecycle>

    /// Binds and listens, and creates the output directory if one is configured.
    ///
    /// - Parameter onEvent: called once per finished, rejected or aborted request; see the
    ///   type's notes on threads.
    /// - Throws: ``SinkError`` when the configuration is out of range, the host does not
    ///   resolve, the port is taken (`errno == EADDRINUSE`) or the directory can't be created or
    ///   written to; its description is one line that says what to do.
    public convenience init(
        configuration: SinkConfiguration = SinkConfiguration(),
        onEvent: @escaping @Sendable (SinkRequestEvent) -> Void = { _ in }
    ) throws(SinkError) {
        try self.init(configuration: configuration, responder: nil, onEvent: onEvent)
    }

    /// A server whose every request `responder` answers (nil: the sink's own storing), with
    /// the same limits, deadlines and connection bound.
    package init(
        configuration: SinkConfiguration, responder: SinkResponder?,
        onEvent: @escaping @Sendable (SinkRequestEvent) -> Void = { _ in }
    ) throws(SinkError) {
        try configuration.validate()
        let address = try SocketAddress.resolve(host: configuration.host, port: configuration.port)
        let storage = try configuration.outputDirectory.map { (directory) throws(SinkError) in
            try BodyStorage(directory: directory)
        }
        let listener: Socket
        do {
            listener = try Socket.listening(on: address, backlog: 1_024)
        } catch {
            throw error.happened(while: "cannot listen on \(address.hostAndPort)")
        }
        let local: SocketAddress
        let wake: WakePipe
        do {
            local = try listener.localAddress()
            wake = try WakePipe(throwing: SinkError.self)
        } catch {
            listener.close()
            throw error.happened(while: "cannot start the sink")
        }
        self.configuration = configuration
        port = local.port
        boundHost = local.host
        self.wake = wake
        context = SinkServerContext(
            configuration: configuration, storage: storage,
            origin: SinkServer.origin(host: local.host, port: local.port), responder: responder, onEvent: onEvent)
        lifecycle = Mutex(.bound(listener: listener.release()))
    }

    deinit {
        stop()
    }

    /// `http://HOST:PORT/`, with a wildcard host replaced by loopback so clients can use it.
    public var urlString: String {
        SinkServer.origin(host: boundHost, port: port) + "/"
    }

    /// `http://HOST:PORT` for a bound address, with a wildcard host replaced by loopback.
    static func origin(host boundHost: String, port: UInt16) -> String {
        let host =
            switch boundHost {
            case "0.0.0.0": "127.0.0.1"
            case "::": "::1"
            default: boundHost
            }
        return host.contains(":") ? "http://[\(host)]:\(port)" : "http://\(host):\(port)"
    }

    /// ``urlString`` as a `URL`.
    public var url: URL {
        guard let url = URL(string: urlString) else {
            preconditionFailure("not a URL: \(urlString)")
        }
        return url
    }

    /// The most recent events, oldest first (at most ``SinkConfiguration/recentEventLimit``).
    public var requests: [SinkRequestEvent] {
        context.recent
    }

    /// How many connections are open right now.
    public var openConnectionCount: Int {
        context.registry.count
    }

    /// How many resumable uploads are open (created, not yet completed, cancelled or expired).
    public var openUploadCount: Int {
        context.uploads.count
    }

    /// Starts accepting connections on a background thread. Does nothing if already started
    /// or stopped.
    public func start() {
        let listener: CInt? = lifecycle.withLock { state in
            guard case .bound(let listener) = state else { return nil }
            state = .running
            return listener
        }
        guard let listener else { return }
        let context = self.context
        let wake = self.wake
        context.spawn(name: "sink accept :\(port)") {
            let loop = AcceptLoop(listener: Socket(owning: listener), wake: wake, context: context)
            loop.run()
        }
    }

    /// Closes the listener and every connection, then waits until all the server's threads
    /// have finished. Requests cut short are reported as incomplete (status 0, "server
    /// stopped"). Blocks the caller, normally for milliseconds; safe to call more than once.
    public func stop() {
        let previous: Lifecycle = lifecycle.withLock { state in
            let previous = state
            state = .stopped
            return previous
        }
        context.markStopping()
        switch previous {
        case .bound(let listener):
            Socket(owning: listener).close()
        case .running:
            wake.signal()
            context.registry.closeAll()
        case .stopped:
            break
        }
        context.threads.wait()
        context.uploads.forgetAll()
        wake.close()
    }

    /// Creates a server, starts it, runs `body`, and stops the server however `body` ends.
    public static func withRunning<Result>(
        _ configuration: SinkConfiguration = SinkConfiguration(),
        onEvent: @escaping @Sendable (SinkRequestEvent) -> Void = { _ in },
        isolation: isolated (any Actor)? = #isolation,
        _ body: (SinkServer) async throws -> Result
    ) async throws -> Result {
        let server = try SinkServer(configuration: configuration, onEvent: onEvent)
        server.start()
        defer { server.stop() }
        return try await body(server)
    }
}
