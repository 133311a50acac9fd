/// Appends protocol buffers in their binary wire format
/// (https://protobuf.dev/programming-guides/encoding/): each field a tag (`number << 3 | wire
/// type`) as a varint, then its value: a varint (integers, bools, enums), 8 or 4 little-endian
/// bytes (`fixed64`, `double`; `fixed32`), or a varint length and that many bytes (strings,
/// bytes, nested messages).
///
/// Only what streamup's messages need, written as a proto3 encoder writes them: fields in the
/// order the caller gives (field-number order, as protobuf's own encoders write, so the bytes
/// equal theirs), and a scalar field at its default (0, empty) left out by the ``Field``
/// methods that say so. A nested message is written by ``message(_:_:)`` into a writer of its
/// own and appended with its length; the bytes of a large message can be counted first
/// (``lengthDelimitedSize(_:)``) and written after its header by the caller.
///
/// Thread safety: a value type.
package struct ProtobufWriter {
    /// How a field's value is laid out.
    ///
    /// Thread safety: a value type.
    package enum WireType: UInt8 {
        case varint = 0
        case fixed64 = 1
        case lengthDelimited = 2
        case fixed32 = 5
    }

    /// The message's bytes so far.
    package private(set) var bytes: [UInt8] = []

    package init() {}

    /// Appends a field's tag.
    package mutating func tag(_ field: Int, _ wireType: WireType) {
        precondition(field > 0 && field < 1 << 29, "protobuf field numbers are 1 to 2^29 - 1")
        varint(UInt64(field) << 3 | UInt64(wireType.rawValue))
    }

    /// Appends `value` as a varint: 7 bits a byte, least significant first, the high bit set on
    /// every byte but the last.
    package mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    /// A varint field (`uint32`, `uint64`, an enum; a negative `int32`/`int64` as its 64-bit
    /// two's complement, ten bytes), left out when 0.
    package mutating func varintField(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        tag(field, .varint)
        varint(value)
    }

    /// A `fixed64` field, left out when 0.
    package mutating func fixed64Field(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        tag(field, .fixed64)
        fixed64(value)
    }

    /// A `fixed32` field, left out when 0.
    package mutating func fixed32Field(_ field: Int, _ value: UInt32) {
        guard value != 0 else { return }
        tag(field, .fixed32)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// 8 little-endian bytes.
    package mutating func fixed64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// A `string` or `bytes` field, left out when empty.
    package mutating func bytesField(_ field: Int, _ value: some Collection<UInt8>) {
        guard !value.isEmpty else { return }
        lengthDelimited(field, value)
    }

    /// A length-delimited field written even when empty: a member of a `oneof` (set, so
    /// present), an element of a repeated message field, or a nested message.
    package mutating func lengthDelimited(_ field: Int, _ value: some Collection<UInt8>) {
        tag(field, .lengthDelimited)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// A nested message field, its fields written by `body` into a writer of its own.
    package mutating func message(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        var nested = ProtobufWriter()
        body(&nested)
        lengthDelimited(field, nested.bytes)
    }

    /// Appends bytes already encoded (fields written elsewhere).
    package mutating func append(_ encoded: some Collection<UInt8>) {
        bytes.append(contentsOf: encoded)
    }

    /// How many bytes `value` takes as a varint.
    package static func varintSize(_ value: UInt64) -> Int {
        value == 0 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7
    }

    /// How many bytes a length-delimited field of `length` bytes takes, tag and length
    /// included (a field number below 16 has a one-byte tag).
    package static func lengthDelimitedSize(_ length: Int, field: Int = 1) -> Int {
        varintSize(UInt64(field) << 3) + varintSize(UInt64(length)) + length
    }
}
