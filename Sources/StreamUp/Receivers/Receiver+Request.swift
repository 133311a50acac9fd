import Foundation

/// What each request to the receiver looks like: endpoint, method, content type, the document
/// around its records (the header its token goes in is the CLI's `Receiver.tokenHeader`).
extension Receiver {
    /// The request method (every receiver here takes POST).
    public var method: String { "POST" }

    /// The `Content-Type` the receiver reads its body as.
    public var contentType: String {
        switch self {
        case .victorialogs: "application/stream+json"
        case .otlp: "application/x-protobuf"
        case .loki, .splunkHEC, .otlpJSON, .datadog, .fluentBit: "application/json"
        case .elasticsearch, .clickhouse: "application/x-ndjson"
        case .vector: "text/plain"
        }
    }

    /// The path added to a URL that has none (nil: the receiver has no usual path).
    public var defaultPath: String? {
        switch self {
        case .victorialogs: "/insert/jsonline"
        case .loki: "/loki/api/v1/push"
        case .elasticsearch: "/logs-streamup-default/_bulk"
        case .splunkHEC: "/services/collector/event"
        case .otlp, .otlpJSON: "/v1/logs"
        case .datadog: "/api/v2/logs"
        case .clickhouse, .vector, .fluentBit: nil
        }
    }

    /// `url` completed for this receiver: its usual path when `url` has none (Elasticsearch:
    /// `/_bulk` after an index path such as `/logs-app`); ClickHouse: an `INSERT INTO logs
    /// FORMAT JSONEachRow` query when there is none; VictoriaLogs: `_msg_field`, `_time_field`
    /// and `_stream_fields` (host, path, the labels) unless the URL sets them. A URL that says
    /// what it wants is left as it is.
    package func url(for url: URL, keys: RecordFormatter.Keys? = nil, labels: [(name: String, value: String)] = []) -> URL {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        let path = components.percentEncodedPath
        if path.isEmpty || path == "/" {
            if let defaultPath { components.percentEncodedPath = defaultPath }
        } else if self == .elasticsearch, !path.hasSuffix("/_bulk") {
            components.percentEncodedPath = (path.hasSuffix("/") ? String(path.dropLast()) : path) + "/_bulk"
        }
        var items = components.queryItems ?? []
        func add(_ name: String, _ value: String?) {
            guard let value, !value.isEmpty, !items.contains(where: { $0.name == name }) else { return }
            items.append(URLQueryItem(name: name, value: value))
        }
        switch self {
        case .clickhouse:
            add("query", "INSERT INTO logs FORMAT JSONEachRow")
        case .victorialogs:
            let keys = keys ?? self.keys
            add("_msg_field", keys.message)
            add("_time_field", keys.time)
            add("_stream_fields", ([keys.host, keys.path].compactMap { $0 } + labels.map(\.name)).joined(separator: ","))
        case .loki, .elasticsearch, .splunkHEC, .otlp, .otlpJSON, .datadog, .vector, .fluentBit:
            break
        }
        if !items.isEmpty { components.queryItems = items }
        return components.url ?? url
    }

    /// The document around each request's records (nil: the records as they are).
    /// - Loki: `labels` (default `job=streamup`) plus `host` unless a label sets it, one stream
    ///   per host and shard (`LokiStreams`): an entry that names its host gets it as its
    ///   stream's `host` label, and the `streamup_shard` label spreads each host's entries over
    ///   8 streams so that Loki never shards them itself and a resend lands where it was first
    ///   sent.
    /// - OTLP/HTTP JSON: one resource (`host.name` and `labels` as its attributes) and one
    ///   scope, `streamup` (OTLP in protobuf: ``otlpExport(labels:host:)`` instead).
    /// - Elasticsearch: a `create` action line per document (what data streams require).
    /// - Datadog, Fluent Bit: a JSON array.
    /// - Throws: ``StreamUpError`` `.invalidConfiguration` for a Loki label name Loki refuses,
    ///   or streamup's own `streamup_shard`.
    package func envelope(labels: [(name: String, value: String)] = [], host: String = RecordFormatter.localHostName()) throws(StreamUpError) -> Envelope? {
        switch self {
        case .loki:
            for label in labels where !Self.isLokiLabelName(label.name) {
                throw StreamUpError(
                    .invalidConfiguration,
                    "'\(label.name)' is not a Loki label name (letters, digits and _, not starting with a digit or __)")
            }
            if labels.contains(where: { $0.name == LokiStreams.shardLabel }) {
                throw StreamUpError(
                    .invalidConfiguration,
                    "'\(LokiStreams.shardLabel)' is streamup's own Loki label (it spreads each host's entries over 8 streams); pick another name")
            }
            var envelope = Envelope(head: Array(#"{"streams":["#.utf8), tail: Array("]}".utf8))
            envelope.lokiStreams = LokiStreams(labels: labels.isEmpty ? [(name: "job", value: "streamup")] : labels, host: host)
            return envelope
        case .otlpJSON:
            let attributes = RecordLayout.otlpAttributes([(name: "host.name", value: host)] + labels)
            let head =
                Array(#"{"resourceLogs":[{"resource":{"attributes":"#.utf8) + attributes
                + Array(#"},"scopeLogs":[{"scope":{"name":"streamup"},"logRecords":["#.utf8)
            return Envelope(head: head, separator: Array(",".utf8), tail: Array("]}]}]}".utf8))
        case .elasticsearch:
            return .elasticsearchBulk()
        case .datadog, .fluentBit:
            return .jsonArray
        case .victorialogs, .clickhouse, .splunkHEC, .otlp, .vector:
            return nil
        }
    }

    /// The binary OTLP request each request's records go in (nil: not OTLP in protobuf): one
    /// resource with `host.name` and `labels` as its attributes, one scope, `streamup`, as
    /// ``envelope(labels:host:)`` makes for OTLP/HTTP JSON.
    package func otlpExport(labels: [(name: String, value: String)] = [], host: String = RecordFormatter.localHostName()) -> OTLPExport? {
        switch self {
        case .otlp: OTLPExport(resourceAttributes: [(name: "host.name", value: host)] + labels)
        case .victorialogs, .loki, .elasticsearch, .clickhouse, .splunkHEC, .otlpJSON, .datadog, .vector, .fluentBit: nil
        }
    }

    /// A request configuration for this receiver at `url` (its ingestion path added when `url`
    /// has none): method, content type, the envelope, and room for the answers it reads.
    /// - Parameters:
    ///   - url: the receiver's address.
    ///   - labels: the stream's labels, where the receiver has them (``labelMeaning``).
    /// - Throws: ``StreamUpError`` for a URL that cannot work or a label the receiver refuses.
    public func configuration(url: URL, labels: [(name: String, value: String)] = []) throws -> UploadConfiguration {
        try configuration(url: url, keys: nil, labels: labels)
    }

    /// A request configuration for this receiver at `url` (completed by ``url(for:keys:labels:)``),
    /// with the record `keys` and the `host` of its envelope.
    package func configuration(
        url: URL, keys: RecordFormatter.Keys?, labels: [(name: String, value: String)] = [],
        host: String = RecordFormatter.localHostName()
    ) throws -> UploadConfiguration {
        var configuration = UploadConfiguration(url: try UploadConfiguration.url(from: self.url(for: url, keys: keys, labels: labels).absoluteString))
        configuration.method = method
        configuration.contentType = contentType
        configuration.body.envelope = try envelope(labels: labels, host: host)
        configuration.body.otlpExport = otlpExport(labels: labels, host: host)
        configuration.maxResponseBodyBytes = max(configuration.maxResponseBodyBytes, limits.maxResponseBodyBytes)
        return configuration
    }

    /// `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__` (reserved for Loki's own labels).
    static func isLokiLabelName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, !name.hasPrefix("__") else { return false }
        func letter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F }
        return letter(first) && bytes.dropFirst().allSatisfy { letter($0) || (0x30...0x39).contains($0) }
    }
}
