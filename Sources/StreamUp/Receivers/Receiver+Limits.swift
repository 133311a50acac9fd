/// How big one request to the receiver may be, and how its answers are read.
extension Receiver {
    /// A receiver's limits, as ``deliveryOptions(_:)`` applies them.
    ///
    /// Thread safety: a value type.
    public struct Limits: Sendable, Equatable {
        /// The most record bytes in one request (nil: streamup's default, 8 MiB).
        public var segmentBytes: Int?
        /// The most records in one request (nil: no limit).
        public var maxRecordsPerSegment: Int?
        /// The most bytes of one record, its `\n` not counted and escapes included: a longer
        /// line is cut into records that fit (`RecordFormatter.pieceLength(_:complete:)`).
        public var maxRecordBytes: Int
        /// Room kept for an answer (Elasticsearch answers with an item per document).
        public var maxResponseBodyBytes: Int
    }

    /// The receiver's limits (record sizes count a record's JSON, escapes included):
    /// - Loki: 1 MiB requests (a request must arrive within its 30 s read timeout, even on a slow
    ///   link), records of at most 256 KiB (its `max_line_size` counts the decoded line, which
    ///   is never longer than the record);
    /// - Splunk HEC: 1,000,000-byte requests (Splunk Cloud's `max_content_length`), records of
    ///   at most 128 KiB;
    /// - Datadog: 4 MiB and 1,000 logs per request (the API takes 5 MB and 1,000 entries),
    ///   records of at most 128 KiB (a log over 1 MB is truncated);
    /// - Fluent Bit: 2 MiB requests (past its 4 MiB `buffer_max_size` it closes the connection
    ///   without an answer), records of at most 256 KiB;
    /// - Elasticsearch: 5 MiB and 10,000 documents per request (the bulk guide's 5–15 MB; the
    ///   count keeps the per-item answer, up to 8 MiB kept, readable), records of at most 1 MiB;
    /// - VictoriaLogs: records of at most 256 KiB (a JSON line over `-insert.maxLineSizeBytes`,
    ///   256 KiB, is skipped while it answers 200);
    /// - OTLP (either encoding): 2 MiB of records per request: Loki's `/otlp/v1/logs` hands a
    ///   request to its ingesters as one gRPC message of at most 4 MiB, about 1.1 times the
    ///   records' JSON, and answers a larger one 503, which no retry fixes (measured with Loki 3:
    ///   4 MiB of records made a 4.6 MB message); the Collector takes 20 MiB. Records of at most
    ///   1 MiB;
    /// - ClickHouse, Vector: streamup's defaults (8 MiB requests, 1 MiB records).
    public var limits: Limits {
        switch self {
        case .loki: Limits(segmentBytes: 1 << 20, maxRecordBytes: 256 << 10, maxResponseBodyBytes: 1 << 20)
        case .splunkHEC: Limits(segmentBytes: 1_000_000, maxRecordBytes: 128 << 10, maxResponseBodyBytes: 64 << 10)
        case .datadog: Limits(segmentBytes: 4 << 20, maxRecordsPerSegment: 1000, maxRecordBytes: 128 << 10, maxResponseBodyBytes: 64 << 10)
        case .fluentBit: Limits(segmentBytes: 2 << 20, maxRecordBytes: 256 << 10, maxResponseBodyBytes: 64 << 10)
        case .elasticsearch: Limits(segmentBytes: 5 << 20, maxRecordsPerSegment: 10_000, maxRecordBytes: 1 << 20, maxResponseBodyBytes: 8 << 20)
        case .victorialogs: Limits(maxRecordBytes: 256 << 10, maxResponseBodyBytes: 64 << 10)
        case .otlp, .otlpJSON: Limits(segmentBytes: 2 << 20, maxRecordBytes: 1 << 20, maxResponseBodyBytes: 64 << 10)
        case .clickhouse, .vector: Limits(maxRecordBytes: 1 << 20, maxResponseBodyBytes: 64 << 10)
        }
    }

    /// The answers worth another try, where the receiver's specification lists them (nil: the
    /// uploader's default, 408, 429 and every 5xx). OTLP/HTTP: 429, 502, 503 and 504 only;
    /// every other 4xx and 5xx "MUST NOT be retried"
    /// (https://opentelemetry.io/docs/specs/otlp/#retryable-response-codes), so a 500 is final
    /// for its request (kept as a dead letter where there is a dead-letter directory).
    public var retryableStatuses: Set<Int>? {
        switch self {
        case .otlp, .otlpJSON: [429, 502, 503, 504]
        case .victorialogs, .loki, .elasticsearch, .clickhouse, .splunkHEC, .datadog, .vector, .fluentBit: nil
        }
    }

    /// How its partial failures are read (nil: it reports none; the status decides).
    package var answerReader: AnswerReader? {
        switch self {
        case .elasticsearch: .elasticsearchBulk
        case .splunkHEC: .splunkHEC
        case .otlp, .otlpJSON: .otlp
        case .loki: .loki
        case .clickhouse: .clickHouse
        case .victorialogs, .datadog, .vector, .fluentBit: nil
        }
    }

    /// Delivery options within the receiver's limits, reading its partial failures, retrying
    /// the answers it says are worth it (``retryableStatuses``), with its window of requests
    /// (``maxInFlight``, adapting); these replace `base`'s values.
    public func deliveryOptions(_ base: StreamUploader.Options = StreamUploader.Options()) -> StreamUploader.Options {
        var options = base
        options.maxInFlight = maxInFlight
        if let segmentBytes = limits.segmentBytes { options.segmentBytes = segmentBytes }
        options.maxRecordsPerSegment = limits.maxRecordsPerSegment ?? options.maxRecordsPerSegment
        // A record and its `\n` are never split by the buffer.
        if format != .raw { options.maxRecordBytes = limits.maxRecordBytes + 1 }
        options.answerReader = answerReader
        if let retryableStatuses { options.retry.retryableStatuses = retryableStatuses }
        return options
    }
}
