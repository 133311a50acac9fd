import Foundation

/// Turns one OTLP/JSON `LogRecord` (the proto3 JSON mapping with OTLP's deviations, as the
/// `otlpLogRecord` record shape writes it, or as an app writes one) into the same `LogRecord`
/// in protobuf's binary encoding.
///
/// Field numbers, from opentelemetry-proto v1 (`opentelemetry/proto/logs/v1/logs.proto` and
/// `common/v1/common.proto`):
///
/// | message | fields |
/// |---|---|
/// | `LogRecord` | 1 `time_unix_nano` fixed64, 2 `severity_number` enum, 3 `severity_text` string, 5 `body` AnyValue, 6 `attributes` repeated KeyValue, 7 `dropped_attributes_count` uint32, 8 `flags` fixed32, 9 `trace_id` bytes, 10 `span_id` bytes, 11 `observed_time_unix_nano` fixed64, 12 `event_name` string |
/// | `AnyValue` (oneof) | 1 `string_value`, 2 `bool_value`, 3 `int_value` int64, 4 `double_value`, 5 `array_value` ArrayValue, 6 `kvlist_value` KeyValueList, 7 `bytes_value` |
/// | `ArrayValue`, `KeyValueList` | 1 `values` repeated AnyValue, KeyValue |
/// | `KeyValue` | 1 `key` string, 2 `value` AnyValue |
///
/// The JSON: lowerCamelCase keys, 64-bit integers as decimal strings (numbers taken too),
/// enums as integers, `traceId`/`spanId` as hex, `bytesValue` as base64; unknown keys are passed
/// over, as the mapping says a receiver does. Fields are written in field-number order, the
/// scalars at their default left out, as protobuf's own encoders write them.
///
/// A record that is not such an object (a raw line, an app's own JSON object with none of a
/// `LogRecord`'s keys) is not refused: it becomes a `LogRecord` whose body is the record's text,
/// without a time, so the request still carries every record.
///
/// Thread safety: stateless.
enum OTLPLogRecordTranscoder {
    /// The binary `LogRecord` for `record` (one record, without its `\n`).
    static func logRecord(_ record: UnsafeRawBufferPointer) -> [UInt8] {
        var reader = JSONReader(record)
        if reader.peek() == UInt8(ascii: "{"), let fields = try? LogRecordFields(&reader), fields.isLogRecord, reader.isAtEnd() {
            return fields.encoded()
        }
        let text = JSONReader.validUTF8(record)
        var writer = ProtobufWriter()
        writer.message(5) { $0.lengthDelimited(1, text) }
        return writer.bytes
    }

    /// The fields of one `LogRecord` as read, each already in its binary form.
    ///
    /// Thread safety: a value type.
    private struct LogRecordFields {
        var time: UInt64 = 0
        var observedTime: UInt64 = 0
        var severityNumber: UInt64 = 0
        var severityText: [UInt8] = []
        var body: [UInt8]?
        var attributes: [[UInt8]] = []
        var droppedAttributesCount: UInt64 = 0
        var flags: UInt32 = 0
        var traceID: [UInt8] = []
        var spanID: [UInt8] = []
        var eventName: [UInt8] = []
        /// Whether any key was a LogRecord's (an object with none is an app's own JSON).
        var isLogRecord = false

        init(_ reader: inout JSONReader) throws {
            try reader.object { reader, key in
                let name = String(decoding: key, as: UTF8.self)
                isLogRecord = isLogRecord || Self.keys.contains(name)
                switch name {
                case "timeUnixNano": time = try UInt64(exactly: OTLPLogRecordTranscoder.integer(&reader)).orThrow()
                case "observedTimeUnixNano": observedTime = try UInt64(exactly: OTLPLogRecordTranscoder.integer(&reader)).orThrow()
                case "severityNumber": severityNumber = UInt64(bitPattern: Int64(try OTLPLogRecordTranscoder.integer(&reader)))
                case "severityText": severityText = try reader.string()
                case "body": body = try OTLPLogRecordTranscoder.anyValue(&reader)
                case "attributes": try reader.array { attributes.append(try OTLPLogRecordTranscoder.keyValue(&$0)) }
                case "droppedAttributesCount": droppedAttributesCount = try UInt64(exactly: OTLPLogRecordTranscoder.integer(&reader)).orThrow()
                case "flags": flags = try UInt32(exactly: OTLPLogRecordTranscoder.integer(&reader)).orThrow()
                case "traceId": traceID = try OTLPLogRecordTranscoder.hex(try reader.string())
                case "spanId": spanID = try OTLPLogRecordTranscoder.hex(try reader.string())
                case "eventName": eventName = try reader.string()
                default: try reader.skipValue()
                }
            }
        }

        static let keys: Set<String> = [
            "timeUnixNano", "observedTimeUnixNano", "severityNumber", "severityText", "body", "attributes", "droppedAttributesCount", "flags",
            "traceId", "spanId", "eventName",
        ]

        func encoded() -> [UInt8] {
            var writer = ProtobufWriter()
            writer.fixed64Field(1, time)
            writer.varintField(2, severityNumber)
            writer.bytesField(3, severityText)
            if let body { writer.lengthDelimited(5, body) }
            for attribute in attributes { writer.lengthDelimited(6, attribute) }
            writer.varintField(7, droppedAttributesCount)
            writer.fixed32Field(8, flags)
            writer.bytesField(9, traceID)
            writer.bytesField(10, spanID)
            writer.fixed64Field(11, observedTime)
            writer.bytesField(12, eventName)
            return writer.bytes
        }
    }

    /// A `KeyValue` object's binary form.
    private static func keyValue(_ reader: inout JSONReader) throws -> [UInt8] {
        var key: [UInt8] = []
        var value: [UInt8]?
        try reader.object { reader, name in
            switch String(decoding: name, as: UTF8.self) {
            case "key": key = try reader.string()
            case "value": value = try anyValue(&reader)
            default: try reader.skipValue()
            }
        }
        var writer = ProtobufWriter()
        writer.bytesField(1, key)
        if let value { writer.lengthDelimited(2, value) }
        return writer.bytes
    }

    /// An `AnyValue` object's binary form: the one member of its `oneof` that is set, written
    /// even at its default (an empty string is still a string); nil for `null` (no value).
    private static func anyValue(_ reader: inout JSONReader) throws -> [UInt8]? {
        var writer = ProtobufWriter()
        if reader.null() { return nil }
        try reader.object { reader, name in
            switch String(decoding: name, as: UTF8.self) {
            case "stringValue":
                writer.lengthDelimited(1, try reader.string())
            case "boolValue":
                writer.tag(2, .varint)
                writer.varint(try reader.bool() ? 1 : 0)
            case "intValue":
                writer.tag(3, .varint)
                writer.varint(UInt64(bitPattern: Int64(try integer(&reader))))
            case "doubleValue":
                writer.tag(4, .fixed64)
                writer.fixed64(try double(&reader).bitPattern)
            case "arrayValue":
                writer.lengthDelimited(5, try values(&reader) { try anyValue(&$0) ?? [] })
            case "kvlistValue":
                writer.lengthDelimited(6, try values(&reader, element: keyValue))
            case "bytesValue":
                let text = String(decoding: try reader.string(), as: UTF8.self)
                let padded = text + String(repeating: "=", count: (4 - text.count % 4) % 4)
                writer.lengthDelimited(7, try Data(base64Encoded: padded).orThrow())
            default:
                try reader.skipValue()
            }
        }
        return writer.bytes
    }

    /// `{"values":[…]}` (an `ArrayValue` or `KeyValueList`): each element as field 1.
    private static func values(_ reader: inout JSONReader, element: (inout JSONReader) throws -> [UInt8]) throws -> [UInt8] {
        var writer = ProtobufWriter()
        try reader.object { reader, name in
            guard name == Array("values".utf8) else { return try reader.skipValue() }
            try reader.array { writer.lengthDelimited(1, try element(&$0)) }
        }
        return writer.bytes
    }

    /// An integer, as a decimal string or a number (proto3 JSON writes 64-bit ones as strings).
    private static func integer(_ reader: inout JSONReader) throws -> Int128 {
        let text = reader.peek() == UInt8(ascii: "\"") ? String(decoding: try reader.string(), as: UTF8.self) : try reader.numberText()
        if let value = Int128(text) { return value }
        // A number written with a fraction or an exponent that is whole (`1e3`, `5.0`).
        guard let value = Double(text), value == value.rounded(), abs(value) < 1.8e19 else { throw JSONReader.Malformed() }
        return Int128(value)
    }

    /// A double: a number, or `"NaN"`, `"Infinity"`, `"-Infinity"` (or a number in a string).
    private static func double(_ reader: inout JSONReader) throws -> Double {
        let text = reader.peek() == UInt8(ascii: "\"") ? String(decoding: try reader.string(), as: UTF8.self) : try reader.numberText()
        switch text {
        case "NaN": return .nan
        case "Infinity": return .infinity
        case "-Infinity": return -.infinity
        default: return try Double(text).orThrow()
        }
    }

    /// Hex digits (either case) as bytes.
    private static func hex(_ text: [UInt8]) throws -> [UInt8] {
        guard text.count % 2 == 0 else { throw JSONReader.Malformed() }
        func digit(_ byte: UInt8) throws -> UInt8 {
            switch byte {
            case 0x30...0x39: return byte - 0x30
            case 0x41...0x46: return byte - 0x41 + 10
            case 0x61...0x66: return byte - 0x61 + 10
            default: throw JSONReader.Malformed()
            }
        }
        return try stride(from: 0, to: text.count, by: 2).map { try digit(text[$0]) << 4 | digit(text[$0 + 1]) }
    }
}

extension Optional {
    /// The value, or a malformed-JSON error.
    fileprivate func orThrow() throws -> Wrapped {
        guard let self else { throw JSONReader.Malformed() }
        return self
    }
}
