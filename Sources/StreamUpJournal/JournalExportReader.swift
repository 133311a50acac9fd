/// Reads journalctl's export format (`--output=export`) as it arrives, in pieces of any size,
/// into ``JournalEntry`` values.
///
/// The format: an entry is its fields, each `NAME=value\n`, or, for a value that is not
/// printable text, `NAME\n`, its length as a little-endian 64-bit number and its bytes, then
/// `\n`; an empty line ends the entry. Every field arrives as it is stored, however large (the
/// JSON output leaves fields over 4 KiB out unless `--all`, and writes bytes that are not text
/// as an array of numbers, several bytes of text per byte).
///
/// Memory: the message is kept whole until its entry ends (once, as bytes); the fields streamup
/// sends along (host, unit, priority, identifier, pid, cursor and time) are kept up to
/// ``maxFieldBytes`` each; every other field is passed over without being kept. An entry without
/// a cursor (nothing journalctl writes) is passed over too.
///
/// Thread safety: a value type, confined to the thread that reads journalctl's output.
package struct JournalExportReader {
    /// The fields kept: which one a value being read fills.
    private enum Field {
        case cursor, realtime, message, host, unit, priority, identifier, pid
    }

    /// Where in a field the next byte falls.
    private enum State {
        /// In a field's name (or at the start of a line).
        case name
        /// In a text value, up to its `\n`.
        case text(Field?)
        /// In the 8 bytes of a binary value's length (`count` read so far).
        case length(Field?, value: UInt64, count: Int)
        /// In a binary value's bytes.
        case binary(Field?, remaining: UInt64)
        /// At the `\n` after a binary value.
        case binaryEnd
    }

    /// The fields of the entry being read.
    private struct Pending {
        var cursor: [UInt8]?
        var realtime: [UInt8]?
        var message: [UInt8]?
        var host: [UInt8]?
        var unit: [UInt8]?
        var priority: [UInt8]?
        var identifier: [UInt8]?
        var pid: [UInt8]?
    }

    /// The most bytes kept of a field other than the message.
    package let maxFieldBytes: Int
    private var state = State.name
    private var name: [UInt8] = []
    private var pending = Pending()

    package init(maxFieldBytes: Int = 64 << 10) {
        self.maxFieldBytes = maxFieldBytes
    }

    /// Reads `bytes`, the next piece of the output, calling `entry` with each entry it ends.
    package mutating func take(_ bytes: UnsafeRawBufferPointer, _ entry: (JournalEntry) throws -> Void) rethrows {
        var index = bytes.startIndex
        while index < bytes.endIndex {
            switch state {
            case .name:
                let byte = bytes[index]
                index += 1
                if byte == 0x3D {  // `=`: a text value follows
                    state = .text(field(named: name))
                    name.removeAll(keepingCapacity: true)
                } else if byte == 0x0A {
                    if name.isEmpty {
                        if let made = finishEntry() { try entry(made) }
                    } else {
                        state = .length(field(named: name), value: 0, count: 0)
                        name.removeAll(keepingCapacity: true)
                    }
                } else if name.count < 256 {
                    name.append(byte)
                }
            case .text(let field):
                let end = bytes[index...].firstIndex(of: 0x0A) ?? bytes.endIndex
                keep(UnsafeRawBufferPointer(rebasing: bytes[index..<end]), in: field)
                index = end
                if end < bytes.endIndex {
                    index += 1
                    state = .name
                }
            case .length(let field, let value, let count):
                let next = value | UInt64(bytes[index]) << (8 * UInt64(count))
                index += 1
                if count == 7 {
                    state = next == 0 ? .binaryEnd : .binary(field, remaining: next)
                    if next == 0 { keep(UnsafeRawBufferPointer(start: nil, count: 0), in: field) }
                } else {
                    state = .length(field, value: next, count: count + 1)
                }
            case .binary(let field, let remaining):
                let available = UInt64(bytes.endIndex - index)
                let count = Int(min(remaining, available))
                keep(UnsafeRawBufferPointer(rebasing: bytes[index..<(index + count)]), in: field)
                index += count
                state = remaining == UInt64(count) ? .binaryEnd : .binary(field, remaining: remaining - UInt64(count))
            case .binaryEnd:
                // The `\n` after the value (anything else: taken as the next field's first byte).
                if bytes[index] == 0x0A { index += 1 }
                state = .name
            }
        }
    }

    /// The kept field `name` names (nil: one passed over; a second message is).
    private func field(named name: [UInt8]) -> Field? {
        switch String(decoding: name, as: UTF8.self) {
        case "__CURSOR": .cursor
        case "__REALTIME_TIMESTAMP": .realtime
        case "MESSAGE": pending.message == nil ? .message : nil
        case "_HOSTNAME": .host
        case "_SYSTEMD_UNIT": .unit
        case "PRIORITY": .priority
        case "SYSLOG_IDENTIFIER": .identifier
        case "_PID": .pid
        default: nil
        }
    }

    /// Adds `bytes` to the value of `field` (the message whole, the others up to `maxFieldBytes`).
    private mutating func keep(_ bytes: UnsafeRawBufferPointer, in field: Field?) {
        guard let field else { return }
        func add(_ value: inout [UInt8]?, limit: Int) {
            var kept = value ?? []
            kept.append(contentsOf: bytes.prefix(max(0, limit - kept.count)))
            value = kept
        }
        switch field {
        case .message:
            // Taken out while it grows, so that the append copies nothing.
            var message = pending.message ?? []
            pending.message = nil
            message.append(contentsOf: bytes)
            pending.message = message
        case .cursor: add(&pending.cursor, limit: 256)
        case .realtime: add(&pending.realtime, limit: 32)
        case .host: add(&pending.host, limit: maxFieldBytes)
        case .unit: add(&pending.unit, limit: maxFieldBytes)
        case .priority: add(&pending.priority, limit: maxFieldBytes)
        case .identifier: add(&pending.identifier, limit: maxFieldBytes)
        case .pid: add(&pending.pid, limit: maxFieldBytes)
        }
    }

    /// The entry the empty line ends (nil without a cursor), and a clean slate for the next.
    private mutating func finishEntry() -> JournalEntry? {
        let fields = pending
        pending = Pending()
        guard let text = fields.cursor, let cursor = JournalCursor(String(decoding: text, as: UTF8.self)) else { return nil }
        let realtime = fields.realtime.flatMap { Int64(String(decoding: $0, as: UTF8.self)) } ?? cursor.realtime ?? 0
        let sent = [(fields.unit, "unit"), (fields.priority, "priority"), (fields.identifier, "identifier"), (fields.pid, "pid")]
        return JournalEntry(
            cursor: cursor, message: fields.message ?? [], realtime: realtime, host: fields.host.map { String(decoding: $0, as: UTF8.self) },
            fields: sent.compactMap { value, name in value.map { (name: name, value: String(decoding: $0, as: UTF8.self)) } })
    }
}
