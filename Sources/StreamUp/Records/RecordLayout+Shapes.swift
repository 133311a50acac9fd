/// The layout of each ``RecordShape`` (the receivers' documentation pages are cited on the
/// shapes' presets, in `Receiver+Presets.swift`).
extension RecordLayout {
    /// The layout of `shape` for records from `path` (nil: none), with the extra string fields
    /// and, where the shape has a place for it (OTLP), the records' severity.
    /// - Throws: `.invalidConfiguration` when keys collide (see ``flatFields(builtIn:extra:)``).
    static func make(
        _ shape: RecordShape, keys: RecordFormatter.Keys, host: String, path: String?, fields: [(name: String, value: String)],
        severity: RecordSeverity? = nil
    ) throws(StreamUpError) -> RecordLayout {
        switch shape {
        case .object, .elasticsearchDocument:
            return try flat(keys: keys, time: .rfc3339, host: host, path: path, fields: fields, mergeable: true)
        case .fluentBitRecord:
            return try flat(keys: keys, time: .epochSeconds, host: host, path: path, fields: fields, mergeable: true)
        case .clickHouseRow:
            return try flat(keys: keys, time: .unixSeconds, host: host, path: path, fields: fields, mergeable: true)
        case .datadogLog:
            return try datadog(keys: keys, host: host, path: path, fields: fields)
        case .splunkEvent:
            return try splunk(host: host, path: path, fields: fields)
        case .lokiEntry:
            return loki(path: path, fields: fields, host: host == RecordFormatter.localHostName() ? nil : host)
        case .otlpLogRecord:
            return otlp(path: path, fields: fields, severity: severity)
        }
    }

    /// The built-in members of a flat object: time, host, path (each when its key is set), and
    /// the message.
    private static func builtIn(keys: RecordFormatter.Keys, time: TimeStyle, host: String, path: String?)
        -> [(label: String, name: String, value: Value)]
    {
        var members: [(label: String, name: String, value: Value)] = []
        if let key = keys.time { members.append(("time", key, .time(time))) }
        if let key = keys.host { members.append(("host", key, .json(jsonString(host)))) }
        if let key = keys.path, let path { members.append(("path", key, .json(jsonString(path)))) }
        members.append(("message", keys.message, .message))
        return members
    }

    private static func flat(
        keys: RecordFormatter.Keys, time: TimeStyle, host: String, path: String?, fields: [(name: String, value: String)], mergeable: Bool
    ) throws(StreamUpError) -> RecordLayout {
        let members = try flatFields(
            builtIn: builtIn(keys: keys, time: time, host: host, path: path),
            extra: fields.map { ($0.name, .json(jsonString($0.value))) })
        return object(members, mergeable: mergeable)
    }

    /// `{"date":…,"hostname":…,"ddsource":"streamup",["service":…,]["ddtags":"k:v,…",]"path":…,"message":…}`:
    /// fields named `ddsource`, `service`, `hostname` or `ddtags` set those members (a given
    /// `ddtags` comes first in the tags); every other field is a tag `key:value`.
    private static func datadog(keys: RecordFormatter.Keys, host: String, path: String?, fields: [(name: String, value: String)]) throws(StreamUpError)
        -> RecordLayout
    {
        let reserved: Set<String> = ["ddsource", "service", "hostname", "ddtags"]
        var members = builtIn(keys: keys, time: .rfc3339, host: host, path: path)
        let message = members.removeLast()
        members.append(("ddsource", "ddsource", .json(jsonString("streamup"))))
        members.append(message)
        var extra: [(name: String, value: Value)] = []
        var tags: [String] = []
        for field in uniqued(fields) {
            if field.name == "ddtags" {
                tags.insert(field.value, at: 0)
            } else if reserved.contains(field.name) {
                extra.append((field.name, .json(jsonString(field.value))))
            } else {
                tags.append("\(field.name):\(field.value)")
            }
        }
        if !tags.isEmpty { extra.append(("ddtags", .json(jsonString(tags.joined(separator: ","))))) }
        return object(try flatFields(builtIn: members, extra: extra), mergeable: false)
    }

    /// `{"time":<s.ms>,"host":…,"source":<path>,["sourcetype":…,"index":…,]"fields":{…},"event":…}`:
    /// fields named `host`, `source`, `sourcetype` or `index` set those keys; the others are
    /// indexed fields (a flat object of strings, as HEC requires). A blank line makes no event:
    /// HEC refuses `"event":""` (code 13, "Event field cannot be blank").
    private static func splunk(host: String, path: String?, fields: [(name: String, value: String)]) throws(StreamUpError) -> RecordLayout {
        let metadata: Set<String> = ["host", "source", "sourcetype", "index"]
        var members: [(label: String, name: String, value: Value)] = [("time", "time", .time(.epochSeconds)), ("host", "host", .json(jsonString(host)))]
        if let path { members.append(("path", "source", .json(jsonString(path)))) }
        members.append(("message", "event", .message))
        var extra: [(name: String, value: Value)] = []
        var indexed: [(name: String, value: String)] = []
        for field in fields {
            if metadata.contains(field.name) {
                extra.append((field.name, .json(jsonString(field.value))))
            } else {
                indexed.append(field)
            }
        }
        if !indexed.isEmpty { extra.append(("fields", .json(jsonObject(indexed)))) }
        var layout = object(try flatFields(builtIn: members, extra: extra), mergeable: false)
        layout.skipsBlankLines = true
        return layout
    }

    /// `["<ns>","<line>"]`, with `{"host":<host>,"filename":<path>,<fields>}` as structured
    /// metadata when there is any (a push entry of two elements is what every Loki version
    /// reads). The host is written only when it is another machine's (a journal entry's
    /// `_HOSTNAME`): the envelope takes a `host` member out of the entry and makes it the
    /// stream's `host` label (`LokiStreams`), whose default is this machine's name.
    private static func loki(path: String?, fields: [(name: String, value: String)], host: String?) -> RecordLayout {
        let metadata = (host.map { [(name: "host", value: $0)] } ?? []) + (path.map { [(name: "filename", value: $0)] } ?? []) + fields
        var builder = Builder()
        builder.literal("[")
        builder.time(.unixNanoseconds)
        builder.literal(",")
        builder.message()
        if !metadata.isEmpty {
            builder.literal(",")
            builder.bytes(jsonObject(metadata))
        }
        builder.literal("]")
        return builder.layout(mergeFields: nil)
    }

    /// An OTLP/JSON `LogRecord` (opentelemetry-proto `logs.proto`, proto3 JSON mapping: int64 as
    /// decimal strings, lowerCamelCase keys, enums as integers): both times, the severity where
    /// it is known, the line as a string body, and the path (`log.file.path`, the
    /// semantic-conventions name) and the fields as string attributes.
    private static func otlp(path: String?, fields: [(name: String, value: String)], severity: RecordSeverity?) -> RecordLayout {
        let attributes = uniqued((path.map { [(name: "log.file.path", value: $0)] } ?? []) + fields)
        var builder = Builder()
        builder.literal(#"{"timeUnixNano":"#)
        builder.time(.unixNanoseconds)
        builder.literal(#","observedTimeUnixNano":"#)
        builder.time(.unixNanoseconds)
        if let severity {
            builder.literal(#","severityNumber":\#(severity.number),"severityText":"#)
            builder.bytes(jsonString(severity.text))
        }
        builder.literal(#","body":{"stringValue":"#)
        builder.message()
        builder.literal("}")
        if !attributes.isEmpty {
            builder.literal(#","attributes":"#)
            builder.bytes(otlpAttributes(attributes))
        }
        builder.literal("}")
        return builder.layout(mergeFields: nil)
    }

    /// `[{"key":"k","value":{"stringValue":"v"}},…]`: OTLP `KeyValue`s of strings.
    static func otlpAttributes(_ members: [(name: String, value: String)]) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        for (index, member) in uniqued(members).enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes +=
                Array(#"{"key":"#.utf8) + jsonString(member.name) + Array(#","value":{"stringValue":"#.utf8)
                + jsonString(member.value) + Array("}}".utf8)
        }
        return bytes + [UInt8(ascii: "]")]
    }
}
