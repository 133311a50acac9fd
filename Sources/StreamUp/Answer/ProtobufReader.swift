/// Reads protocol buffers' binary wire format (https://protobuf.dev/programming-guides/encoding/)
/// field by field: each field's number and value, a field of a wire type it does not know (or
/// a value cut short) ending the reading. For the few answers streamup decodes (OTLP's
/// `ExportLogsServiceResponse`, `google.rpc.Status`), never for anything large.
///
/// Thread safety: a value type.
struct ProtobufReader {
    /// One field's value.
    ///
    /// Thread safety: a value type.
    enum Value {
        case varint(UInt64)
        case fixed64(UInt64)
        case lengthDelimited([UInt8])
        case fixed32(UInt32)
    }

    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Whether every byte has been read as a field (after `next()` returned nil: the bytes were
    /// fields to their end, not cut short or garbled).
    var isAtEnd: Bool { index == bytes.count }

    /// The next field, or nil at the end (or where the bytes stop making sense).
    mutating func next() -> (field: Int, value: Value)? {
        guard index < bytes.count, let key = varint(), key >> 3 > 0, key >> 3 < 1 << 29 else { return nil }
        let field = Int(key >> 3)
        switch key & 7 {
        case 0:
            return varint().map { (field, .varint($0)) }
        case 1:
            return little(8).map { (field, .fixed64($0)) }
        case 2:
            guard let length = varint(), length <= UInt64(bytes.count - index) else { return nil }
            let value = Array(bytes[index..<(index + Int(length))])
            index += Int(length)
            return (field, .lengthDelimited(value))
        case 5:
            return little(4).map { (field, .fixed32(UInt32($0))) }
        default:
            return nil
        }
    }

    private mutating func varint() -> UInt64? {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 70, by: 7) {
            guard index < bytes.count else { return nil }
            let byte = bytes[index]
            index += 1
            if shift < 64 { value |= UInt64(byte & 0x7F) << shift }
            if byte < 0x80 { return value }
        }
        return nil
    }

    private mutating func little(_ count: Int) -> UInt64? {
        guard bytes.count - index >= count else { return nil }
        var value: UInt64 = 0
        for offset in 0..<count { value |= UInt64(bytes[index + offset]) << (8 * offset) }
        index += count
        return value
    }
}
