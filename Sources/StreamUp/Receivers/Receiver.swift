import Foundation

/// A log receiver streamup speaks to (`streamup --to NAME`): what its requests look like, where
/// its ingestion endpoint usually is, how it authenticates, how big one request may be, and how
/// it reports records it refused. A preset gives everything a ``StreamUploader`` needs; any
/// of it can be changed afterwards (the CLI's explicit options override a preset's).
///
/// ```swift
/// let receiver = Receiver.loki
/// let configuration = try receiver.configuration(url: URL(string: "http://loki:3100")!, labels: [("job", "app")])
/// let uploader = try StreamUploader(configuration, options: receiver.deliveryOptions())
/// let formatter = try receiver.formatter(path: "/var/log/app.log")
/// let tailer = try FileTailer(patterns: ["/var/log/app.log"], format: { _ in formatter })  // import StreamUpTail
/// let answer = try await uploader.run(tailer)
/// ```
///
/// | receiver | endpoint added to a URL without a path | request |
/// |---|---|---|
/// | `victorialogs` | `/insert/jsonline` | NDJSON `_msg`/`_time`; `_stream_fields` in the query |
/// | `loki` | `/loki/api/v1/push` | `{"streams":[{"stream":{labels},"values":[…]},…]}`, a stream per host and shard |
/// | `elasticsearch` (`opensearch`) | `/logs-streamup-default/_bulk` | `_bulk`: `{"create":{}}` + ECS document per record |
/// | `clickhouse` | `/?query=INSERT INTO logs FORMAT JSONEachRow` | JSONEachRow rows |
/// | `splunk-hec` | `/services/collector/event` | concatenated HEC events |
/// | `otlp` | `/v1/logs` | `ExportLogsServiceRequest` in protobuf (OTLP/HTTP's default) |
/// | `otlp-json` (`otlpJSON`) | `/v1/logs` | `ExportLogsServiceRequest` in OTLP/HTTP JSON |
/// | `datadog` | `/api/v2/logs` | JSON array of logs |
/// | `vector` | — | the lines as they are (`http_server`'s default `bytes` codec) |
/// | `fluent-bit` | — (the path is the tag) | JSON array of records |
///
/// Each preset's documentation page is ``Receiver/documentation``; the request shapes are
/// `RecordShape`; the limits are in ``deliveryOptions(_:)``.
///
/// Thread safety: a value type.
public enum Receiver: String, Sendable, CaseIterable {
    case victorialogs
    case loki
    case elasticsearch
    case clickhouse
    case splunkHEC = "splunk-hec"
    case otlp
    case otlpJSON = "otlp-json"
    case datadog
    case vector
    case fluentBit = "fluent-bit"

    /// The preset called `name` (its raw value; `opensearch` is `elasticsearch`).
    public init?(named name: String) {
        if name == "opensearch" {
            self = .elasticsearch
        } else {
            self.init(rawValue: name)
        }
    }

    /// The names `init(named:)` takes, for help texts.
    public static var names: [String] { allCases.map(\.rawValue) + ["opensearch"] }

    /// The receiver's ingestion API documentation, which the preset follows.
    public var documentation: String {
        switch self {
        case .victorialogs: "https://docs.victoriametrics.com/victorialogs/data-ingestion/#json-stream-api"
        case .loki: "https://grafana.com/docs/loki/latest/reference/loki-http-api/#ingest-logs"
        case .elasticsearch: "https://www.elastic.co/guide/en/elasticsearch/reference/8.17/docs-bulk.html"
        case .clickhouse: "https://clickhouse.com/docs/en/interfaces/formats#jsoneachrow"
        case .splunkHEC: "https://docs.splunk.com/Documentation/Splunk/9.1.1/Data/FormateventsforHTTPEventCollector"
        case .otlp, .otlpJSON: "https://opentelemetry.io/docs/specs/otlp/#otlphttp"
        case .datadog: "https://docs.datadoghq.com/api/latest/logs/#send-logs"
        case .vector: "https://vector.dev/docs/reference/configuration/sources/http_server/"
        case .fluentBit: "https://docs.fluentbit.io/manual/pipeline/inputs/http"
        }
    }

    /// How lines become records: JSON records of ``shape`` (`ndjson`), or the lines as they are
    /// (`raw`, Vector's `bytes` codec).
    package var format: RecordFormat {
        switch self {
        case .vector: .raw
        case .victorialogs, .loki, .elasticsearch, .clickhouse, .splunkHEC, .otlp, .otlpJSON, .datadog, .fluentBit: .ndjson
        }
    }

    /// The receiver's record shape.
    package var shape: RecordShape {
        switch self {
        case .victorialogs, .vector: .object
        case .loki: .lokiEntry
        case .elasticsearch: .elasticsearchDocument
        case .clickhouse: .clickHouseRow
        case .splunkHEC: .splunkEvent
        case .otlp, .otlpJSON: .otlpLogRecord
        case .datadog: .datadogLog
        case .fluentBit: .fluentBitRecord
        }
    }

    /// The key names of its records (VictoriaLogs: `_msg` and `_time`, its special fields).
    package var keys: RecordFormatter.Keys {
        switch self {
        case .victorialogs: RecordFormatter.Keys(message: "_msg", time: "_time")
        case .loki, .elasticsearch, .clickhouse, .splunkHEC, .otlp, .otlpJSON, .datadog, .vector, .fluentBit: shape.defaultKeys
        }
    }

    /// What `--label k=v` means here: Loki stream labels, VictoriaLogs stream fields, OTLP
    /// resource attributes; nil where a receiver has no such thing.
    public var labelMeaning: String? {
        switch self {
        case .loki: "stream labels"
        case .victorialogs: "stream fields (added to every record and listed in _stream_fields)"
        case .otlp, .otlpJSON: "resource attributes"
        case .elasticsearch, .clickhouse, .splunkHEC, .datadog, .vector, .fluentBit: nil
        }
    }

    /// Whether one never-ending request works: the receiver stores records while the body is
    /// still open (VictoriaLogs flushes about every second; ClickHouse per block). The others
    /// read the whole body first.
    public var takesSingleRequest: Bool {
        switch self {
        case .victorialogs, .clickhouse: true
        case .loki, .elasticsearch, .splunkHEC, .otlp, .otlpJSON, .datadog, .vector, .fluentBit: false
        }
    }

    /// The most requests out at once by default (``deliveryOptions(_:)``): a window that starts
    /// at one and adapts up to this (``StreamUploader/Options/adaptiveInFlight``).
    ///
    /// Segments answered out of order store records out of order. Eight where each record
    /// carries the time it was read and the receiver orders by it or does not care: VictoriaLogs,
    /// ClickHouse, Elasticsearch, Splunk, Datadog and Fluent Bit keep each record's own time;
    /// Loki (2.4 and later, `unordered_writes` true by default) takes entries out of order
    /// within an hour of a stream's newest; an OTLP collector takes concurrent exports. One for
    /// Vector: its records are the lines as they are and `http_server` stamps each with the time
    /// it arrived, so arrival order is the only order there is.
    public var maxInFlight: Int {
        switch self {
        case .victorialogs, .loki, .elasticsearch, .clickhouse, .splunkHEC, .otlp, .otlpJSON, .datadog, .fluentBit: 8
        case .vector: 1
        }
    }

    /// The formatter of this receiver's records from the file at `path` (nil: no file), with
    /// `fields` on every record (for VictoriaLogs, `labels` are fields too: its stream fields),
    /// for `FileTailer(patterns:options:onEvent:format:)` (StreamUpTail).
    /// - Parameters:
    ///   - path: the file the lines come from, named in each record.
    ///   - fields: extra string fields on every record.
    ///   - labels: the stream's labels, as given to ``configuration(url:labels:)``.
    /// - Throws: ``StreamUpError`` `.invalidConfiguration` when a field collides with a key.
    public func formatter(
        path: String? = nil, fields: [(name: String, value: String)] = [], labels: [(name: String, value: String)] = []
    ) throws(StreamUpError) -> RecordFormatter {
        try formatter(format: nil, path: path, fields: fields, labels: labels)
    }

    /// The formatter of its records from `path` (nil: stdin), with `fields` on every record;
    /// for VictoriaLogs, `labels` are fields too (its stream fields). Records are at most
    /// `maxRecordBytes` (nil: the receiver's ``Limits/maxRecordBytes``); bytes that are not
    /// UTF-8 become U+FFFD unless `invalidUTF8` says otherwise; `severity`: how severe the
    /// records are, where the input says (OTLP records carry it).
    /// - Throws: ``StreamUpError`` `.invalidConfiguration` when a field collides with a key.
    package func formatter(
        format: RecordFormat? = nil, keys: RecordFormatter.Keys? = nil, host: String = RecordFormatter.localHostName(), path: String? = nil,
        fields: [(name: String, value: String)] = [], labels: [(name: String, value: String)] = [], maxRecordBytes: Int? = nil,
        invalidUTF8: RecordFormatter.InvalidUTF8 = .replace, severity: RecordSeverity? = nil
    ) throws(StreamUpError) -> RecordFormatter {
        let all = self == .victorialogs ? labels + fields : fields
        return try RecordFormatter(
            format: format ?? self.format, shape: shape, keys: keys ?? self.keys, host: host, path: path, fields: all,
            maxRecordBytes: maxRecordBytes ?? limits.maxRecordBytes, invalidUTF8: invalidUTF8, severity: severity)
    }
}
