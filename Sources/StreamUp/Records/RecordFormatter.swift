import Foundation
import StreamUpHTTP

/// Turns one input line (its bytes, without the `\n`) into one record: a line ending in `\n`.
///
/// - ``RecordFormat/raw``: the line itself.
/// - ``RecordFormat/ndjson``: the line in a record of the formatter's ``RecordShape``. The
///   default, ``RecordShape/object``, is a JSON object, its members in this fixed order: the
///   time the line was read (RFC 3339 UTC with milliseconds), the host, the path (only when one
///   is given), the extra fields in the order given, and last the line itself as a string. Each
///   key is configurable; time, host and path can be left out (a nil key). The other shapes are
///   the entries receivers take (Loki, OTLP, Splunk HEC, …).
/// - ``RecordFormat/json``: a line that is exactly one JSON object (checked against the JSON
///   grammar by `JSONObjectScanner`, not re-serialized: its bytes, key order and number
///   spellings are kept) gets the same fields inserted right after its `{`, minus any key the
///   object already has: **the line's own key wins** and no key is written twice. Any other line
///   is wrapped as in `ndjson`, and so is every line in a shape that cannot take an object of
///   its own (``RecordShape/mergesJSONObjects``).
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

    /// The format this formatter writes.
    public let format: RecordFormat
    /// How each record is laid out (a flat object, or a receiver's entry).
    public let shape: RecordShape
    /// The longest line made into one record: a producer cuts longer lines here (`LineRecords`).
    public let maxLineBytes: Int
    private let layout: RecordLayout
    private var time = RecordTime()
    private var scanner = JSONObjectScanner()

    /// Sets up a formatter.
    /// - Parameters:
    ///   - format: NDJSON records from lines, or JSON lines with the fields merged in.
    ///   - shape: how records are laid out (``RecordShape``; a flat object by default).
    ///   - keys: the key names, for the shapes that have settable ones (nil: the shape's
    ///     ``RecordShape/defaultKeys``).
    ///   - host: the value of the host field (this machine's name by default).
    ///   - path: the value of the path field (the file a follower reads); nil writes no path.
    ///   - extra: extra string fields (`--field name=value`), in order.
    ///   - maxLineBytes: the longest line made into one record (see ``maxRecordBytes``).
    /// - Throws: `StreamUpError` `.invalidConfiguration` when two of the keys (message, time,
    ///   host, path) are the same, or an extra field uses the message key.
    public init(
        format: RecordFormat, shape: RecordShape = .object, keys: Keys? = nil, host: String = RecordFormatter.localHostName(),
        path: String? = nil, fields extra: [(name: String, value: String)] = [], maxLineBytes: Int = 1 << 20
    ) throws(StreamUpError) {
        guard maxLineBytes > 0 else { throw StreamUpError(.invalidConfiguration, "records need a positive line length") }
        self.format = format
        self.shape = shape
        self.maxLineBytes = maxLineBytes
        layout = try RecordLayout.make(shape, keys: keys ?? shape.defaultKeys, host: host, path: path, fields: extra)
    }

    /// The most bytes one record can take: a line of ``maxLineBytes`` whose every byte needs a
    /// six-byte escape (`\u001b`, `\udcff`), plus the rest of the record. A buffer that splits
    /// records longer than its limit must allow this much, or it splits a record's JSON.
    public var maxRecordBytes: Int {
        let literals = layout.parts.reduce(0) { $0 + $1.literal.count }
        let times = layout.parts.filter { if case .time = $0.slot { true } else { false } }.count
        let merged = layout.mergeFields.map { $0.reduce(0) { $0 + $1.keyPrefix.count + 32 } } ?? 0
        return literals + times * 32 + merged + 6 * maxLineBytes
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
            if let fields = layout.mergeFields, let object = scanner.scan(line) {
                merge(line, object, fields: fields, milliseconds: milliseconds, to: &output)
            } else {
                wrap(line, milliseconds: milliseconds, to: &output)
            }
        }
    }

    /// Writes the record with the line as the message (nothing for a blank line, in a shape
    /// whose receiver refuses those).
    private mutating func wrap(_ line: UnsafeRawBufferPointer, milliseconds: Int64, to output: inout [UInt8]) {
        if layout.skipsBlankLines && line.allSatisfy({ $0 == 0x20 || (0x09...0x0D).contains($0) }) { return }
        time.begin(milliseconds: milliseconds)
        for part in layout.parts {
            output.append(contentsOf: part.literal)
            switch part.slot {
            case .time(let style): time.append(style, to: &output)
            case .message: JSONString.appendContent(line, to: &output)
            case .end: break
            }
        }
    }

    /// Writes the object with the fields it lacks inserted after its `{`.
    private mutating func merge(
        _ line: UnsafeRawBufferPointer, _ object: JSONObjectScanner.Object, fields: [RecordLayout.Field], milliseconds: Int64,
        to output: inout [UInt8]
    ) {
        time.begin(milliseconds: milliseconds)
        output.append(contentsOf: UnsafeRawBufferPointer(rebasing: line[...object.openBrace]))
        var inserted = 0
        for field in fields where !scanner.keys.contains(where: { scanner.key($0, in: line, equals: field.name) }) {
            if inserted > 0 { output.append(UInt8(ascii: ",")) }
            output.append(contentsOf: field.keyPrefix)
            switch field.value {
            case .json(let bytes): output.append(contentsOf: bytes)
            case .time(let style):
                if style.isQuoted { output.append(UInt8(ascii: "\"")) }
                time.append(style, to: &output)
                if style.isQuoted { output.append(UInt8(ascii: "\"")) }
            case .message: preconditionFailure("the message field is never merged into an object")
            }
            inserted += 1
        }
        if inserted > 0 && object.memberCount > 0 { output.append(UInt8(ascii: ",")) }
        output.append(contentsOf: UnsafeRawBufferPointer(rebasing: line[(object.openBrace + 1)...]))
        output.append(0x0A)
    }

    /// This machine's name from `gethostname` (no DNS lookup), or `localhost` if it has none.
    public static func localHostName() -> String {
        var name = [CChar](repeating: 0, count: 256)
        guard gethostname(&name, name.count - 1) == 0 else { return "localhost" }
        let bytes = name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return bytes.isEmpty ? "localhost" : String(decoding: bytes, as: UTF8.self)
    }
}
