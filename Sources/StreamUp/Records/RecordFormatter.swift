import Foundation

/// Turns one input line (its bytes, without the `\n`) into one record: a line ending in `\n`.
///
/// - ``RecordFormat/raw``: the line itself.
/// - ``RecordFormat/ndjson``: a JSON object, its members in this fixed order: the time the line
///   was read (RFC 3339 UTC with milliseconds), the host, the path (only when one is given), the
///   extra fields in the order given, and last the line itself as a string. Each key is
///   configurable; time, host and path can be left out (a nil key).
/// - ``RecordFormat/json``: a line that is exactly one JSON object (checked against the JSON
///   grammar by `JSONObjectScanner`, not re-serialized: its bytes, key order and number
///   spellings are kept) gets the same fields inserted right after its `{`, minus any key the
///   object already has: **the line's own key wins** and no key is written twice. Any other line
///   is wrapped as in `ndjson`.
///
/// An extra field whose key is the time, host or path key replaces that value in place (for
/// example `host` set by hand); of two extra fields with one key, the last wins.
///
/// The line goes in as a JSON string that decodes back to exactly its bytes: invalid UTF-8 is
/// written as `\udcXX` escapes (Python's surrogateescape, see `JSONString`), control characters
/// as `\n`, `\t`, `\u001b`…; nothing is trimmed (a CRLF line keeps its `\r`).
///
/// Thread safety: a value type; never shared (it keeps a per-second timestamp cache and scan
/// scratch space, so `append` is `mutating`).
public struct RecordFormatter: Sendable {
    /// The JSON keys of the fields a record carries.
    ///
    /// Thread safety: a value type; safe to pass anywhere.
    public struct Keys: Sendable, Hashable {
        /// The key of the line itself.
        public var message: String
        /// The key of the time the line was read; nil leaves the time out.
        public var time: String?
        /// The key of the host name; nil leaves the host out.
        public var host: String?
        /// The key of the file path, written when the formatter is given one; nil leaves it out.
        public var path: String?

        public init(message: String = "message", time: String? = "time", host: String? = "host", path: String? = "path") {
            self.message = message
            self.time = time
            self.host = host
            self.path = path
        }
    }

    /// What a field's value is.
    private enum Value: Sendable {
        /// A string, already written as a JSON string literal.
        case constant([UInt8])
        case time
        case message
    }

    /// One field: its key as UTF-8 (to compare with keys a line has) and `"key":` as written.
    private struct Field: Sendable {
        var name: [UInt8]
        var keyPrefix: [UInt8]
        var value: Value
    }

    /// A wrapped record, precomputed: literal bytes, then the value that follows them.
    private struct Part: Sendable {
        enum Slot: Sendable { case time, message, end }
        var literal: [UInt8]
        var slot: Slot
    }

    /// The format this formatter writes.
    public let format: RecordFormat
    /// Every field in output order, the message last.
    private let fields: [Field]
    /// A wrapped record: `{"time":"` time `","host":…,"message":"` message `"}\n`.
    private let wrapParts: [Part]
    private var timestamps = TimestampWriter()
    private var scanner = JSONObjectScanner()

    /// Sets up a formatter.
    /// - Parameters:
    ///   - host: the value of the host field (this machine's name by default).
    ///   - path: the value of the path field (the file a follower reads); nil writes no path.
    ///   - fields: extra string fields (`--field name=value`), in order.
    /// - Throws: `StreamUpError` `.invalidConfiguration` when two of the keys (message, time,
    ///   host, path) are the same, or an extra field uses the message key.
    public init(
        format: RecordFormat, keys: Keys = Keys(), host: String = RecordFormatter.localHostName(), path: String? = nil,
        fields extra: [(name: String, value: String)] = []
    ) throws(StreamUpError) {
        self.format = format
        var builtIn: [(label: String, name: String, value: Value)] = []
        if let key = keys.time { builtIn.append(("time", key, .time)) }
        if let key = keys.host { builtIn.append(("host", key, .constant(Self.jsonString(host)))) }
        if let key = keys.path, let path { builtIn.append(("path", key, .constant(Self.jsonString(path)))) }
        builtIn.append(("message", keys.message, .message))
        for (index, field) in builtIn.enumerated() {
            if let other = builtIn[..<index].first(where: { Array($0.name.utf8) == Array(field.name.utf8) }) {
                throw StreamUpError(
                    .invalidConfiguration, "the \(other.label) and \(field.label) fields both use the key \"\(field.name)\"")
            }
        }
        var ordered = builtIn.dropLast().map { (name: Array($0.name.utf8), value: $0.value) }
        for field in extra {
            let name = Array(field.name.utf8)
            guard name != Array(keys.message.utf8) else {
                throw StreamUpError(
                    .invalidConfiguration,
                    "the field \"\(field.name)\" uses the message key; pick another field name or message key")
            }
            if let index = ordered.firstIndex(where: { $0.name == name }) {
                ordered[index].value = .constant(Self.jsonString(field.value))
            } else {
                ordered.append((name, .constant(Self.jsonString(field.value))))
            }
        }
        ordered.append((Array(keys.message.utf8), .message))
        let fields = ordered.map { field in
            var keyPrefix: [UInt8] = []
            field.name.withUnsafeBytes { JSONString.append($0, to: &keyPrefix) }
            keyPrefix.append(UInt8(ascii: ":"))
            return Field(name: field.name, keyPrefix: keyPrefix, value: field.value)
        }
        self.fields = fields
        wrapParts = Self.wrapTemplate(fields)
    }

    /// Appends the record for `line` (without its `\n`), read at `time`, to `output`.
    public mutating func append(_ line: UnsafeRawBufferPointer, readAt time: Date, to output: inout [UInt8]) {
        append(line, milliseconds: Int64((time.timeIntervalSince1970 * 1000).rounded(.down)), to: &output)
    }

    /// The record for `line` (without its `\n`), read at `time`.
    public mutating func record(_ line: [UInt8], readAt time: Date) -> [UInt8] {
        var output: [UInt8] = []
        line.withUnsafeBytes { append($0, readAt: time, to: &output) }
        return output
    }

    /// Appends the record for `line`, read `milliseconds` after 1970-01-01T00:00:00Z.
    mutating func append(_ line: UnsafeRawBufferPointer, milliseconds: Int64, to output: inout [UInt8]) {
        switch format {
        case .raw:
            output.append(contentsOf: line)
            output.append(0x0A)
        case .ndjson:
            wrap(line, milliseconds: milliseconds, to: &output)
        case .json:
            if let object = scanner.scan(line) {
                merge(line, object, milliseconds: milliseconds, to: &output)
            } else {
                wrap(line, milliseconds: milliseconds, to: &output)
            }
        }
    }

    /// Writes `{` fields `}` with the line as the message.
    private mutating func wrap(_ line: UnsafeRawBufferPointer, milliseconds: Int64, to output: inout [UInt8]) {
        for part in wrapParts {
            output.append(contentsOf: part.literal)
            switch part.slot {
            case .time: appendTime(milliseconds, to: &output)
            case .message: JSONString.appendContent(line, to: &output)
            case .end: break
            }
        }
    }

    /// Writes the object with the fields it lacks inserted after its `{`.
    private mutating func merge(
        _ line: UnsafeRawBufferPointer, _ object: JSONObjectScanner.Object, milliseconds: Int64, to output: inout [UInt8]
    ) {
        output.append(contentsOf: UnsafeRawBufferPointer(rebasing: line[...object.openBrace]))
        var inserted = 0
        for field in fields.dropLast() where !scanner.keys.contains(where: { scanner.key($0, in: line, equals: field.name) }) {
            if inserted > 0 { output.append(UInt8(ascii: ",")) }
            output.append(contentsOf: field.keyPrefix)
            switch field.value {
            case .constant(let bytes): output.append(contentsOf: bytes)
            case .time:
                output.append(UInt8(ascii: "\""))
                appendTime(milliseconds, to: &output)
                output.append(UInt8(ascii: "\""))
            case .message: preconditionFailure("the message field is never merged into an object")
            }
            inserted += 1
        }
        if inserted > 0 && object.memberCount > 0 { output.append(UInt8(ascii: ",")) }
        output.append(contentsOf: UnsafeRawBufferPointer(rebasing: line[(object.openBrace + 1)...]))
        output.append(0x0A)
    }

    private mutating func appendTime(_ milliseconds: Int64, to output: inout [UInt8]) {
        timestamps.append(milliseconds: milliseconds, to: &output)
    }

    /// The wrapped record as parts: all bytes but the time and the message are written once here.
    private static func wrapTemplate(_ fields: [Field]) -> [Part] {
        var parts: [Part] = []
        var literal: [UInt8] = [UInt8(ascii: "{")]
        for (index, field) in fields.enumerated() {
            if index > 0 { literal.append(UInt8(ascii: ",")) }
            literal += field.keyPrefix
            switch field.value {
            case .constant(let bytes):
                literal += bytes
            case .time:
                parts.append(Part(literal: literal + [UInt8(ascii: "\"")], slot: .time))
                literal = [UInt8(ascii: "\"")]
            case .message:
                parts.append(Part(literal: literal + [UInt8(ascii: "\"")], slot: .message))
                literal = [UInt8(ascii: "\"")]
            }
        }
        parts.append(Part(literal: literal + [UInt8(ascii: "}"), 0x0A], slot: .end))
        return parts
    }

    private static func jsonString(_ string: String) -> [UInt8] {
        var bytes: [UInt8] = []
        JSONString.append(string, to: &bytes)
        return bytes
    }

    /// This machine's name from `gethostname` (no DNS lookup), or `localhost` if it has none.
    public static func localHostName() -> String {
        var name = [CChar](repeating: 0, count: 256)
        guard gethostname(&name, name.count - 1) == 0 else { return "localhost" }
        let bytes = name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return bytes.isEmpty ? "localhost" : String(decoding: bytes, as: UTF8.self)
    }
}
