import Dispatch
import Foundation
import StreamUpHTTP
import StreamUpSystem

/// What every thread of one server shares: configuration, storage, the sequence counter, the
/// connection registry, the event sink, the group of running threads, the injected faults, the
/// de-duplicated streams and the resumable uploads.
///
/// Thread safety: immutable except for `sequence`, `stopping` and `recentEvents` (each behind its
/// own mutex); callable from any thread. ``report(_:)`` calls the user's handler outside any lock.
final class SinkServerContext: Sendable {
    let configuration: SinkConfiguration
    let storage: BodyStorage?
    let registry: ConnectionRegistry
    /// Every accept and connection thread is entered here before it starts and leaves as its
    /// last action; ``SinkServer/stop()`` waits on it.
    let threads = DispatchGroup()
    let parserLimits: HTTPRequestParser.Limits
    /// The injected faults still armed (see ``SinkFaults``).
    let faultState: FaultState
    /// De-duplicated streams; present when there is an output directory.
    let streams: StreamStore?
    /// The resumable uploads in progress.
    let uploads: ResumableUploads
    /// `http://HOST:PORT` of the listener (loopback for a wildcard), for upload URLs when a
    /// request has no usable `Host`.
    let origin: String
    /// Answers every request instead of the sink's storing, when set (``SinkResponder``).
    let responder: SinkResponder?

    private let onEvent: @Sendable (SinkRequestEvent) -> Void
    private let sequence: Mutex<Int>
    private let stopping = Mutex(false)
    private let recentEvents: Mutex<RecentEvents>

    /// Stack reserved for each connection thread. Only touched pages become resident.
    static let threadStackSize = 512 << 10

    init(
        configuration: SinkConfiguration, storage: BodyStorage?, origin: String, responder: SinkResponder? = nil,
        onEvent: @escaping @Sendable (SinkRequestEvent) -> Void
    ) {
        self.responder = responder
        self.configuration = configuration
        self.storage = storage
        self.origin = origin
        self.onEvent = onEvent
        faultState = FaultState(faults: configuration.faults)
        let limits = StreamState.Limits(
            bytes: configuration.maxStreamBytesAside, pieces: configuration.maxStreamPiecesAside, sinkBytes: configuration.maxBytesAside,
            sinkPieces: configuration.maxPiecesAside)
        let streams = storage.map { StreamStore(directory: $0.directory, limits: limits) }
        self.streams = streams
        uploads = ResumableUploads(
            directory: storage?.directory, streams: streams, hashBodies: configuration.hashBodies,
            limit: configuration.maxUploads, expiry: configuration.uploadExpiry)
        registry = ConnectionRegistry(limit: configuration.maxConnections)
        sequence = Mutex(storage?.highestExistingSequence ?? 0)
        recentEvents = Mutex(RecentEvents(limit: configuration.recentEventLimit))
        parserLimits = HTTPRequestParser.Limits(
            maxHeaderBytes: configuration.maxHeaderBytes,
            maxChunkLineBytes: configuration.maxChunkLineBytes)
    }

    /// The next request's sequence number (1, 2, … after any existing files).
    func nextSequence() -> Int {
        sequence.withLock { sequence in
            sequence += 1
            return sequence
        }
    }

    var isStopping: Bool {
        stopping.withLock { $0 }
    }

    func markStopping() {
        stopping.withLock { $0 = true }
    }

    /// Records `event` in the recent list, then hands it to the user's handler.
    func report(_ event: SinkRequestEvent) {
        recentEvents.withLock { $0.append(event) }
        onEvent(event)
    }

    var recent: [SinkRequestEvent] {
        recentEvents.withLock { $0.events }
    }

    /// Runs `body` on a new thread with a ``threadStackSize`` stack, inside ``threads``.
    func spawn(name: String, _ body: @escaping @Sendable () -> Void) {
        let group = threads
        group.enter()
        let thread = Thread {
            body()
            group.leave()
        }
        thread.stackSize = SinkServerContext.threadStackSize
        thread.name = name
        thread.start()
    }
}
