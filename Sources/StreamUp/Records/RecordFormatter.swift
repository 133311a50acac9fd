import Foundation
import StreamUpHTTP

/// Turns one input line (its bytes, without the `\n`) into one record: a line ending in `\n`.
///
/// An app gets one for a receiver from ``Receiver/formatter(path:fields:labels:)`` and hands it to
/// `FileTailer(patterns:options:onEvent:format:)` (StreamUpTail).
///
/// - `RecordFormat.raw`: the line itself.
/// - `RecordFormat.ndjson`: the line in a record of the formatter's `RecordShape`. The
///   default, `RecordShape.object`, is a JSON object, its members in this fixed order: the
///   time the line was read (RFC 3339 UTC with milliseconds), the host, the path (only when one
///   is given), the extra fields in the order given, and last the line itself as a string. Each
///   key is configurable; time, host and path can be left out (a nil key). The other shapes are
///   the entries receivers take (Loki, OTLP, Splunk HEC, …).
/// - `RecordFormat.json`: a line that is exactly one JSON object (checked against the JSON
///   grammar by `JSONObjectScanner`, not re-serialized: its bytes, key order and number
///   spellings are kept) gets the same fields inserted right after its `{`, minus any key the
///   object already has: **the line's own key wins** and no key is written twice. Any other line
///   is wrapped as in `ndjson`, and so is every line in a shape that cannot take an object of
///   its own (`RecordShape.mergesJSONObjects`).
///
/// An extra field whose key is the time, host or path key replaces that value in place (for
/// example `host` set by hand); of two extra fields with one key, the last wins.
///
/// The line goes in as a JSON string of valid Unicode: control characters as `\n`, `\t`,
/// `\u001b`…, bytes that are not UTF-8 as U+FFFD for each maximal subpart (or, with
/// `InvalidUTF8.surrogateEscape`, as `\udcXX` per byte, which decodes back to exactly the
/// bytes; see `JSONString`); nothing is trimmed (a CRLF line keeps its `\r`).
///
/// No record is longer than `maxRecordBytes`: a producer cuts a longer line into pieces
/// (`LineRecords`, asking `pieceLength(_:complete:)`), each the longest start of the rest
/// whose record fits, counted after escaping, so where the reads of the input fall never
/// matters.
///
/// Thread safety: a value type; never shared (it keeps a per-second timestamp cache and scan
/// scratch space, so `append` is `mutating`).
public struct RecordFormatter: Sendable {
    /// The JSON keys of the fields a record carries.
    ///
    /// Thread safety: a value type; safe to pass anywhere.
    package struct Keys: Sendable, Hashable {
        /// The key of the line itself.
        package var message: String
        /// The key of the time the line was read; nil leaves the time out.
        package var time: String?
        /// The key of the host name; nil leaves the host out.
        package var host: String?
        /// The key of the file path, written when the formatter is given one; nil leaves it out.
        package var path: String?

        package init(message: String = "message", time: String? = "time", host: String? = "host", path: String? = "path") {
            self.message = message
            self.time = time
            self.host = host
            self.path = path
        }
    }

    /// What bytes of a line that are not UTF-8 become in its JSON string.
    ///
    /// Thread safety: a value type.
    package enum InvalidUTF8: String, Sendable, CaseIterable {
        /// U+FFFD for each maximal subpart of an ill-formed sequence (Unicode §3.9): valid
        /// Unicode, which every receiver stores as it is. The default.
        case replace
        /// `\udcXX` for each byte 0xXX (Python's surrogateescape, PEP 383): lossless for a
        /// reader that restores it (Python's `s.encode("utf-8", "surrogateescape")`), but lone
        /// surrogates: Loki refuses the whole request, VictoriaLogs stores the escape as text.
        case surrogateEscape = "surrogateescape"

        var json: JSONString.InvalidUTF8 { self == .replace ? .replace : .surrogateEscape }
    }

    /// The format this formatter writes.
    package let format: RecordFormat
    /// How each record is laid out (a flat object, or a receiver's entry).
    package let shape: RecordShape
    /// The most bytes one record takes, its `\n` not counted (as receivers count a line).
    package let maxRecordBytes: Int
    /// What bytes that are not UTF-8 become.
    package let invalidUTF8: InvalidUTF8
    private let layout: RecordLayout
    /// The most escaped line bytes a wrapped record has room for.
    private let messageBudget: Int
    /// The most bytes a line that is a JSON object gains when fields are merged into it.
    private let mergeGrowth: Int
    private var time = RecordTime()
    private var scanner = JSONObjectScanner()
    /// Where the times of this formatter's records come from when the lines' source offsets
    /// are given (``SourceTimes``): the same line gets the same time after a restart. nil:
    /// the time each line is read.
    package var sourceTimes: (times: SourceTimes, source: SourceID)?
    /// Whether the records carry a time at all.
    private let hasTime: Bool
    /// The time given to the nanosecond for the record being made, and whether it steps past the
    /// record before it (nil: its milliseconds).
    private var pendingTime: (nanoseconds: Int64, stepped: Bool)?

    /// Sets up a formatter.
    /// - Parameters:
    ///   - format: NDJSON records from lines, or JSON lines with the fields merged in.
    ///   - shape: how records are laid out (``RecordShape``; a flat object by default).
    ///   - keys: the key names, for the shapes that have settable ones (nil: the shape's
    ///     ``RecordShape/defaultKeys``).
    ///   - host: the value of the host field (this machine's name by default).
    ///   - path: the value of the path field (the file a follower reads); nil writes no path.
    ///   - extra: extra string fields (`--field name=value`), in order.
    ///   - maxRecordBytes: the most bytes of one record, its `\n` not counted (1 MiB by
    ///     default); longer lines are cut into pieces that fit.
    ///   - invalidUTF8: what bytes that are not UTF-8 become (U+FFFD by default).
    ///   - severity: how severe the records are, in the shapes that say so (OTLP); nil: unknown.
    /// - Throws: `StreamUpError` `.invalidConfiguration` when two of the keys (message, time,
    ///   host, path) are the same, an extra field uses the message key, or the record's other
    ///   fields leave less than 64 bytes of `maxRecordBytes` for the line.
    package init(
        format: RecordFormat, shape: RecordShape = .object, keys: Keys? = nil, host: String = RecordFormatter.localHostName(),
        path: String? = nil, fields extra: [(name: String, value: String)] = [], maxRecordBytes: Int = 1 << 20,
        invalidUTF8: InvalidUTF8 = .replace, severity: RecordSeverity? = nil
    ) throws(StreamUpError) {
        self.format = format
        self.shape = shape
        self.maxRecordBytes = maxRecordBytes
        self.invalidUTF8 = invalidUTF8
        layout = try RecordLayout.make(shape, keys: keys ?? shape.defaultKeys, host: host, path: path, fields: extra, severity: severity)
        hasTime =
            format != .raw
            && (layout.parts.contains { if case .time = $0.slot { true } else { false } }
                || layout.mergeFields?.contains { if case .time = $0.value { true } else { false } } == true)
        // A time takes at most 32 bytes (`TimeStyle`); the literals include the `\n`.
        let literals = layout.parts.reduce(0) { $0 + $1.literal.count }
        let times = layout.parts.filter { if case .time = $0.slot { true } else { false } }.count
        let rest = literals + times * 32
        messageBudget = maxRecordBytes + 1 - rest
        mergeGrowth = layout.mergeFields.map { $0.reduce(0) { $0 + $1.keyPrefix.count + 1 + $1.value.maximumCount } } ?? 0
        guard maxRecordBytes > 0 else { throw StreamUpError(.invalidConfiguration, "records need a positive length") }
        guard format == .raw || messageBudget >= 64 else {
            throw StreamUpError(
                .invalidConfiguration,
                "records of at most \(maxRecordBytes) bytes leave no room for the line: the record's other fields take up to \(rest - 1)")
        }
    }

    /// How many bytes from the start of `line` (without its `\n`) make one record of at most
    /// ``maxRecordBytes``: `line.count` when the whole line fits, else the longest start that
    /// does, never ending inside a character or a sequence replaced by one U+FFFD (at least one
    /// byte). With `complete` false, the line may go on: the answer is `line.count` unless a
    /// cut is sure however it goes on (the caller then cuts only 4 bytes or more before the end
    /// of what it holds, so no UTF-8 sequence at the cut is judged before it is whole).
    package mutating func pieceLength(_ line: UnsafeRawBufferPointer, complete: Bool) -> Int {
        if format == .raw { return min(line.count, maxRecordBytes) }
        // Every byte takes at most six when escaped (`\u001b`, `\udcff`).
        if line.count <= messageBudget / 6 { return line.count }
        if format == .json, layout.mergeFields != nil, line.count + mergeGrowth <= maxRecordBytes {
            // It may be (or become) an object that goes as it is.
            if !complete || scanner.scan(line) != nil { return line.count }
        }
        return JSONString.prefixLength(line, within: messageBudget, invalidUTF8: invalidUTF8.json)
    }

    /// Appends the record for `line` (without its `\n`), read at `time`, to `output`. Its time
    /// is the one the line carries when given (`runtime`, a container runtime's, in Unix
    /// nanoseconds), else the time it was read; with ``sourceTimes`` and the line's source
    /// `offset`, the one ``SourceTimes`` fixes for that line from that time (the same whenever the
    /// line is read again). Without them, a runtime's time is kept to the nanosecond, a record
    /// at or before the one before it 1 ns after it.
    package mutating func append(_ line: UnsafeRawBufferPointer, readAt time: Date, runtime: Int64? = nil, offset: Int64? = nil, to output: inout [UInt8]) {
        let milliseconds = Int64((time.timeIntervalSince1970 * 1000).rounded(.down))
        guard hasTime, let offset, let sourceTimes else {
            guard let runtime else { return append(line, milliseconds: milliseconds, to: &output) }
            return append(line, nanoseconds: runtime, stepped: true, to: &output)
        }
        if let runtime {
            let fixed = sourceTimes.times.nanoseconds(of: sourceTimes.source, at: offset, writtenAt: runtime)
            return append(line, nanoseconds: fixed, stepped: false, to: &output)
        }
        let read = milliseconds.multipliedReportingOverflow(by: 1_000_000)
        let fixed = sourceTimes.times.nanoseconds(of: sourceTimes.source, at: offset, readAt: read.overflow ? Int64.max : read.partialValue)
        append(line, nanoseconds: fixed, stepped: false, to: &output)
    }

    /// Appends the record for `line` (without its `\n`) at exactly `nanoseconds` after
    /// 1970-01-01T00:00:00Z, whatever the record before it had: a time its source fixes (a journal
    /// entry's, from its cursor), the same whenever the record is made again.
    package mutating func append(_ line: UnsafeRawBufferPointer, fixedNanoseconds nanoseconds: Int64, to output: inout [UInt8]) {
        append(line, nanoseconds: nanoseconds, stepped: false, to: &output)
    }

    /// Appends the record for `line` at `nanoseconds` after 1970-01-01T00:00:00Z (`stepped`: or
    /// 1 ns after the record before it, if that one is not earlier).
    private mutating func append(_ line: UnsafeRawBufferPointer, nanoseconds: Int64, stepped: Bool, to output: inout [UInt8]) {
        pendingTime = (nanoseconds, stepped)
        defer { pendingTime = nil }
        append(line, milliseconds: 0, to: &output)
    }

    /// The record for `line` (without its `\n`), read at `time`.
    package mutating func record(_ line: [UInt8], readAt time: Date) -> [UInt8] {
        var output: [UInt8] = []
        line.withUnsafeBytes { append($0, readAt: time, to: &output) }
        return output
    }

    /// Appends the record for `line`, read `milliseconds` after 1970-01-01T00:00:00Z.
    package mutating func append(_ line: UnsafeRawBufferPointer, milliseconds: Int64, to output: inout [UInt8]) {
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
        beginTime(milliseconds)
        for part in layout.parts {
            output.append(contentsOf: part.literal)
            switch part.slot {
            case .time(let style): time.append(style, to: &output)
            case .message: JSONString.appendContent(line, invalidUTF8: invalidUTF8.json, to: &output)
            case .end: break
            }
        }
    }

    /// Writes the object with the fields it lacks inserted after its `{`.
    private mutating func merge(
        _ line: UnsafeRawBufferPointer, _ object: JSONObjectScanner.Object, fields: [RecordLayout.Field], milliseconds: Int64,
        to output: inout [UInt8]
    ) {
        beginTime(milliseconds)
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

    /// Starts the record's time: the one fixed to the nanosecond, else `milliseconds`.
    private mutating func beginTime(_ milliseconds: Int64) {
        if let pendingTime {
            time.begin(nanoseconds: pendingTime.nanoseconds, stepped: pendingTime.stepped)
        } else {
            time.begin(milliseconds: milliseconds)
        }
    }

    /// This machine's name from `gethostname` (no DNS lookup), or `localhost` if it has none.
    package static func localHostName() -> String {
        var name = [CChar](repeating: 0, count: 256)
        guard gethostname(&name, name.count - 1) == 0 else { return "localhost" }
        let bytes = name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return bytes.isEmpty ? "localhost" : String(decoding: bytes, as: UTF8.self)
    }
}
