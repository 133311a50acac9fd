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
        /// Lines longer than this are cut into records of this size, chosen so that a record of
        /// such a line stays within the receiver's limits even if every byte needs escaping.
        public var maxLineBytes: Int
        /// Room kept for an answer (Elasticsearch answers with an item per document).
        public var maxResponseBodyBytes: Int
    }

    /// The receiver's limits:
    /// - Loki: 1 MiB requests (a request must arrive within its 30 s read timeout, even on a slow
    ///   link), lines cut at 85 KiB (Loki's 256 KiB line limit counts decoded bytes, and an
    ///   invalid byte decodes to the three of U+FFFD);
    /// - Splunk HEC: 1,000,000-byte requests (Splunk Cloud's `max_content_length`), lines cut at
    ///   128 KiB;
    /// - Datadog: 4 MiB and 1,000 logs per request (the API takes 5 MB and 1,000 entries), lines
    ///   cut at 128 KiB (a log over 1 MB is truncated);
    /// - Fluent Bit: 2 MiB requests (past its 4 MiB `buffer_max_size` it closes the connection
    ///   without an answer), lines cut at 256 KiB;
    /// - Elasticsearch: 5 MiB and 10,000 documents per request (the bulk guide's 5–15 MB; the
    ///   count keeps the per-item answer, up to 8 MiB kept, readable);
    /// - VictoriaLogs: lines cut at 42 KiB (a JSON line over 256 KiB, `-insert.maxLineSizeBytes`,
    ///   is skipped);
    /// - OTLP (20 MiB), ClickHouse, Vector: streamup's defaults (8 MiB requests, 1 MiB lines).
    public var limits: Limits {
        switch self {
        case .loki: Limits(segmentBytes: 1 << 20, maxLineBytes: (256 << 10) / 3, maxResponseBodyBytes: 1 << 20)
        case .splunkHEC: Limits(segmentBytes: 1_000_000, maxLineBytes: 128 << 10, maxResponseBodyBytes: 64 << 10)
        case .datadog: Limits(segmentBytes: 4 << 20, maxRecordsPerSegment: 1000, maxLineBytes: 128 << 10, maxResponseBodyBytes: 64 << 10)
        case .fluentBit: Limits(segmentBytes: 2 << 20, maxLineBytes: 256 << 10, maxResponseBodyBytes: 64 << 10)
        case .elasticsearch: Limits(segmentBytes: 5 << 20, maxRecordsPerSegment: 10_000, maxLineBytes: 1 << 20, maxResponseBodyBytes: 8 << 20)
        case .victorialogs: Limits(maxLineBytes: 42 << 10, maxResponseBodyBytes: 64 << 10)
        case .otlp, .clickhouse, .vector: Limits(maxLineBytes: 1 << 20, maxResponseBodyBytes: 64 << 10)
        }
    }

    /// How its partial failures are read (nil: it reports none; the status decides).
    public var answerReader: AnswerReader? {
        switch self {
        case .elasticsearch: .elasticsearchBulk
        case .splunkHEC: .splunkHEC
        case .otlp: .otlp
        case .loki: .loki
        case .clickhouse: .clickHouse
        case .victorialogs, .datadog, .vector, .fluentBit: nil
        }
    }

    /// The most bytes a record can take (a line of ``Limits/maxLineBytes`` with every byte
    /// escaped, plus its keys, host, path and fields): a segment must never split one.
    public var maxRecordBytes: Int { 6 * limits.maxLineBytes + (64 << 10) }

    /// Delivery options within the receiver's limits, reading its partial failures.
    public func deliveryOptions(_ base: ReliableUploader.Options = ReliableUploader.Options()) -> ReliableUploader.Options {
        var options = base
        if let segmentBytes = limits.segmentBytes { options.segmentBytes = segmentBytes }
        options.maxRecordsPerSegment = limits.maxRecordsPerSegment ?? options.maxRecordsPerSegment
        if format != .raw { options.maxRecordBytes = max(options.maxRecordBytes, maxRecordBytes) }
        options.answerReader = answerReader
        return options
    }
}
