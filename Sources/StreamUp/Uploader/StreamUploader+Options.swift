import Foundation

extension StreamUploader {
    /// How the stream is cut, kept and retried.
    public struct Options: Sendable {
        /// End a segment at the last record boundary within this many bytes (default 8 MiB;
        /// at most half the storage's capacity: the uploader's `options` say what was used).
        public var segmentBytes = 8 << 20
        /// End a segment at the first record boundary this long after its first byte (default
        /// 1 s): how long a record waits before a whole-request receiver can see it.
        public var segmentDuration: Duration = .seconds(1)
        /// Where records end: requests end only there (default: lines).
        public var records: RecordMode = .lines
        /// The longest record; a longer one is split there, with a notice (default 1 MiB).
        public var maxRecordBytes = 1 << 20
        /// The most records in one segment (nil: no limit; Datadog takes at most 1,000).
        public var maxRecordsPerSegment: Int?
        /// Where unacknowledged bytes are held (default: 8 MiB of memory); it must hold one
        /// record of `maxRecordBytes`.
        public var storage: Storage = .memory(capacity: 8 << 20)
        /// How segments reach the server (default: a request each).
        public var delivery: SegmentDelivery = .requests
        /// Which failures are retried, and how often.
        public var retry = RetryPolicy()
        /// Set aside segments the server refuses for good (or that run out of retries) in this
        /// directory and go on, instead of stopping; and the single records a receiver refuses
        /// while it stores the others (see `answerReader`).
        public var deadLetterDirectory: URL?
        /// Reads each segment's answer for records the receiver refused while it stored the
        /// others (Elasticsearch items, Splunk's invalid event, OTLP partial success, Loki's
        /// ignored entries): those are reported, kept in `deadLetterDirectory`, never sent
        /// again, and what the receiver did not process is. nil: the status alone decides.
        package var answerReader: AnswerReader?
        /// Save where a `PositionedProducer`'s sources stand in this file, and continue from
        /// there on the next start.
        public var stateFile: URL?
        /// Forget the saved position of a source once the producer has not followed it for
        /// this long (`SourceChange.stopped(_:)`); nil: keep every position.
        public var forgetSourcesAfter: Duration?
        /// Names the stream in `Streamup-Stream-Id` (a spool with pending bytes keeps its own).
        /// nil (the default): each uploader draws a new one, so two uploaders made from the same
        /// options never share a stream at the receiver. With a `stateFile` and the bytes in
        /// memory, a stream id equal to the one the state file saved continues that stream at
        /// the offset its saved positions stand for: give it only for a producer that makes the
        /// same bytes again from those positions.
        public var streamID: String?
        /// Send to these URLs instead of the configuration's alone (each with the configuration's
        /// method, headers and body), spread by `endpointChoice`; an endpoint that fails in a way
        /// that is retried is set aside with a backoff and probed again, and the segment goes to
        /// another one at once (``EndpointSet``). Plain requests only. Empty: the configuration's URL.
        package var endpoints: [URL] = []
        package var endpointChoice: EndpointChoice = .failover
        /// The most segment requests out at once (default 1: each segment waits for the answer
        /// to the one before). Above 1, segments are cut and sent while earlier ones wait for
        /// their answers; the stream is still acknowledged in order. Plain requests only: a
        /// resumable upload, one live request and a stream with a `deadLetterDirectory` (whose
        /// offsets leave out what is set aside) keep to one.
        public var maxInFlight = 1
        /// Whether the number of requests out adapts to the answers between 1 and `maxInFlight`
        /// (grows while they come back 2xx and no slower, halves on 429, 503, timeouts or a
        /// window of slower answers), or stays at `maxInFlight`.
        public var adaptiveInFlight = true
        public init() {}

        /// The options of one live chunked request (``SegmentDelivery/singleRequest``), the
        /// rest as by default.
        public static var singleRequest: Options {
            var options = Options()
            options.delivery = .singleRequest
            return options
        }

        /// The spool directory's path, if the bytes are held there.
        package var spoolDirectory: String? {
            guard case .spool(let directory, _) = storage else { return nil }
            return directory.path
        }
    }
}
