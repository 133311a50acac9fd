/// How a formatted record is laid out: the flat JSON object of `--format ndjson`, or the entry a
/// receiver's ingestion API takes when its records need more than a few keys. A
/// ``RecordFormatter`` writes one record per input line, always ending in `\n`; the receiver's
/// per-request document around the records is an ``Envelope`` (see ``Receiver``).
///
/// In every shape the line goes in as one JSON string that decodes back to exactly its bytes
/// (`JSONString`: control characters escaped, invalid UTF-8 as `\udcXX`).
///
/// | shape | one record (`…` is the line) |
/// |---|---|
/// | `object` | `{"time":"<RFC 3339>","host":"h","path":"p",<fields>,"message":"…"}` (keys settable) |
/// | `lokiEntry` | `["<unix ns>","…"]`, or `["<unix ns>","…",{"host":"h","filename":"p",<fields>}]` (structured metadata; the host only when it is another machine's) |
/// | `otlpLogRecord` | `{"timeUnixNano":"<ns>","observedTimeUnixNano":"<ns>","body":{"stringValue":"…"},"attributes":[…]}` |
/// | `splunkEvent` | `{"time":<s.ms>,"host":"h","source":"p","event":"…","fields":{<fields>}}` |
/// | `datadogLog` | `{"date":"<RFC 3339>","hostname":"h","ddsource":"streamup","ddtags":"k:v,…","path":"p","message":"…"}` |
/// | `fluentBitRecord` | `{"date":<s.ms>,"host":"h","path":"p",<fields>,"log":"…"}` |
/// | `elasticsearchDocument` | `{"@timestamp":"<RFC 3339>","host.name":"h","log.file.path":"p",<fields>,"message":"…"}` (ECS names) |
/// | `clickHouseRow` | `{"time":<unix s>,"host":"h","path":"p",<fields>,"message":"…"}` (JSONEachRow) |
///
/// The shapes that are flat objects take their key names from ``RecordFormatter/Keys`` (each
/// has its receiver's names as ``defaultKeys``). Times are when the line was read. Nanosecond times (Loki, OTLP) are unique and increasing
/// within the process: Loki silently drops an entry whose time and line equal one it holds, so
/// two equal lines read in one millisecond get times 1 ns apart. The path is written only when
/// the formatter has one (a followed file).
///
/// Thread safety: a value type.
package enum RecordShape: String, Sendable, CaseIterable {
    /// A flat JSON object (`--format ndjson`): time, host, path, the extra fields, the message;
    /// every key settable through ``RecordFormatter/Keys``.
    case object
    /// A Loki push entry: the time in nanoseconds as a string and the line; the path (as
    /// `filename`) and the extra fields as structured metadata (Loki 2.9 and later), and the
    /// host when it is another machine's (the envelope makes it the stream's `host` label).
    case lokiEntry
    /// An OTLP/JSON `LogRecord`: the line as a string body; the path (`log.file.path`) and the
    /// extra fields as attributes (the host goes in the envelope's resource).
    case otlpLogRecord
    /// A Splunk HEC event: epoch seconds with milliseconds, `host`, `source` (the path), the line
    /// as `event`; extra fields named `host`, `source`, `sourcetype` or `index` set those keys,
    /// the others are indexed `fields`. A line that is empty or only white space makes no
    /// event: HEC refuses a blank one (code 13) and stops the request there.
    case splunkEvent
    /// A Datadog log: `date`, `hostname`, `ddsource` (default `streamup`), `service`, `ddtags`
    /// and the line as `message`; extra fields named `ddsource`, `service` or `hostname` set
    /// those keys, the others become tags `key:value`.
    case datadogLog
    /// A Fluent Bit record: `date` in epoch seconds (as Fluent Bit's own `json` output writes
    /// it) and the line as `log`.
    case fluentBitRecord
    /// An Elasticsearch/OpenSearch document in ECS names: `@timestamp`, `host.name`,
    /// `log.file.path`, the extra fields, `message`. Both read a dot in a field name as an
    /// object path, so `host.name` lands where ECS mappings (the `logs-*-*` data streams) want it.
    case elasticsearchDocument
    /// A ClickHouse `JSONEachRow` row: `time` as whole Unix seconds (what a `DateTime` column
    /// reads in every version, whatever the server's time zone), `host`, `path`, the extra
    /// fields, `message`.
    case clickHouseRow

    /// Whether a line that is a JSON object keeps its own object with the fields merged in
    /// (``RecordFormat/json``). The other shapes send such a line as the message string.
    package var mergesJSONObjects: Bool {
        switch self {
        case .object, .elasticsearchDocument, .fluentBitRecord, .clickHouseRow: true
        case .lokiEntry, .otlpLogRecord, .splunkEvent, .datadogLog: false
        }
    }

    /// The key names the receiver expects, for the shapes that are flat objects.
    package var defaultKeys: RecordFormatter.Keys {
        switch self {
        case .object: RecordFormatter.Keys()
        case .elasticsearchDocument: RecordFormatter.Keys(message: "message", time: "@timestamp", host: "host.name", path: "log.file.path")
        case .fluentBitRecord: RecordFormatter.Keys(message: "log", time: "date")
        case .clickHouseRow: RecordFormatter.Keys()
        case .datadogLog: RecordFormatter.Keys(message: "message", time: "date", host: "hostname")
        case .lokiEntry, .otlpLogRecord, .splunkEvent: RecordFormatter.Keys()
        }
    }

    /// Whether ``RecordFormatter/Keys`` names the fields (the other shapes use the receiver's
    /// fixed names).
    package var usesKeys: Bool {
        switch self {
        case .object, .elasticsearchDocument, .fluentBitRecord, .clickHouseRow, .datadogLog: true
        case .lokiEntry, .otlpLogRecord, .splunkEvent: false
        }
    }
}
