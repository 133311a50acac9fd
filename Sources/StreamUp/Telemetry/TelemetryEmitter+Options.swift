import Foundation

extension TelemetryEmitter {
    /// How much the emitter holds, what a full buffer does to `emit`, and how the records
    /// reach the server.
    ///
    /// ```swift
    /// var options = TelemetryEmitter.Options()
    /// options.whenFull = .wait(atMost: .milliseconds(50))
    /// options.delivery.retry.maxRetryTime = .seconds(600)   // give up after 10 minutes of failures
    /// options.delivery.storage = .spool(directory: URL(fileURLWithPath: "/var/spool/myapp"))
    /// let emitter = try TelemetryEmitter(url: url, options: options)
    /// ```
    ///
    /// Thread safety: a value type.
    public struct Options: Sendable {
        /// Bytes of records held in memory while the receiver is slower than the app or down
        /// (default 8 MiB: a 30 s outage at 1,000 records a second of about 120 bytes is 3.6 MB,
        /// so it rides out about a minute of that). The memory is taken from the system as
        /// records fill it and handed back once they are acknowledged, so an emitter whose
        /// receiver keeps up holds about one segment. A segment carries at most half of it, a
        /// record at most all of it. With a spool (`delivery.storage`) records wait on disk
        /// instead, up to the spool's capacity, and this is not used.
        public var bufferSize = 8 << 20
        /// What `emit` and `send` do when the buffer is full (default ``WhenFull/dropNewest``:
        /// they never wait). `tryEmit` and `trySend` always drop the record they were given.
        public var whenFull: WhenFull = .dropNewest
        /// How segments are cut, kept and retried (``StreamUploader/Options``): segment size and
        /// time, `storage` (memory, whose capacity is `bufferSize`, or a spool on disk that
        /// survives a crash), `retry`, the resumable protocol. One live request
        /// (``StreamUploader/SegmentDelivery/singleRequest``) is refused: its body waits
        /// inside URLSession and stalls the app's other requests.
        ///
        /// Retries: the uploader's default limit (10 retries, no `maxRetryTime`), meant for a
        /// command that ends, is taken as none: the emitter retries for the life of the app
        /// unless the app sets a limit. A `retry.maxReconnectDelay` left unset is 1 s: a
        /// receiver that cannot be reached is tried again within a second, so delivery resumes
        /// within about a second of its return, while a receiver that answers a failure (429,
        /// 5xx) gets the backoff up to `retry.maxDelay` (30 s) and its `Retry-After`.
        public var delivery = StreamUploader.Options()

        public init() {}

        /// The bound on the wait after an attempt that never reached the receiver, when the app
        /// sets none: a connection attempt every half second on average while it is down, and
        /// delivery within about a second of its return.
        static let reconnectDelay: Duration = .seconds(1)

        /// The uploader options the emitter runs with: its retry defaults, its buffer as the
        /// memory storage.
        /// - Throws: ``StreamUpError`` (`.invalidConfiguration`) for one live request or a buffer
        ///   size out of range.
        func uploaderOptions() throws -> StreamUploader.Options {
            guard bufferSize > 0 && bufferSize <= 1 << 30 else {
                throw StreamUpError(.invalidConfiguration, "buffer size \(bufferSize) is out of range (1 byte to 1 GiB)")
            }
            var options = delivery
            guard options.delivery != .singleRequest else {
                throw StreamUpError(
                    .invalidConfiguration,
                    "an emitter never sends one live request: its body would wait inside URLSession and stall the app's other requests; use segments")
            }
            if options.retry.maxRetries == RetryPolicy().maxRetries && options.retry.maxRetryTime == nil {
                // The uploader's default limit suits a command that ends; an app's emitter rides
                // out an outage of any length unless the app set a limit.
                options.retry.maxRetries = nil
            }
            if options.retry.maxReconnectDelay == nil { options.retry.maxReconnectDelay = Self.reconnectDelay }
            if case .memory = options.storage {
                // One meaning for the buffer's size: what is held in memory.
                options.storage = .memory(capacity: bufferSize)
                options.maxRecordBytes = min(options.maxRecordBytes, bufferSize)
            }
            return options
        }
    }

    /// What `emit` and `send` do when the buffer is full. (`tryEmit` and `trySend` always drop
    /// the record they were given.)
    ///
    /// There is no "drop oldest": the oldest bytes in an acknowledged buffer may be on the
    /// wire in a segment that will be sent again after a failure, and a record cannot be taken
    /// out from under a request; dropping the newest keeps every request whole.
    ///
    /// Thread safety: a value type.
    public struct WhenFull: Sendable, Equatable {
        /// The longest `emit` waits for space (zero: it never waits).
        let patience: Duration

        /// Drop the record being emitted, count it and report it: `emit` never waits (the default).
        public static let dropNewest = WhenFull(patience: .zero)

        /// Wait for space at most `bound` (on the emitter's clock), in line behind the records
        /// emitted before; then drop the record, count it and report it. A record is written
        /// whole or not at all.
        public static func wait(atMost bound: Duration) -> WhenFull {
            precondition(bound >= .zero, "a wait bound cannot be negative")
            return WhenFull(patience: bound)
        }
    }

    /// Counters readable at any time.
    ///
    /// Thread safety: a value type.
    public struct Metrics: Sendable, Equatable {
        /// Records (or `send` payloads) written into the buffer.
        public var accepted: Int
        /// Records dropped because the buffer was full (or the emitter had finished).
        public var dropped: Int
        /// Bytes written into the buffer (heartbeats included).
        public var bytesProduced: Int
        /// Bytes the server acknowledged.
        public var bytesSent: Int
        /// Bytes waiting in the buffer.
        public var bytesBuffered: Int { bytesProduced - bytesSent }
    }
}
