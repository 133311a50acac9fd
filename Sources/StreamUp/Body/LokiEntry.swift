/// One Loki push entry as a record holds it, `["<ns>","<line>"]` or `["<ns>","<line>",{metadata}]`
/// (``RecordShape/lokiEntry``), read far enough to find its host: a structured-metadata member
/// named `host` (a journal entry's `_HOSTNAME`, or `--field host=…`), which the envelope makes
/// the stream's `host` label and leaves out of the entry, and the entry's hash, which picks its
/// shard (``LokiStreams``).
///
/// Only this grammar is read (JSON white space allowed between tokens): a record that is
/// anything else has no host, is sent as it is, and Loki says what it thinks of it.
///
/// Thread safety: a value type.
struct LokiEntry: Equatable {
    /// The host member's value as the record writes it, quotes included (nil: none, or empty).
    var host: Range<Int>?
    /// The bytes the sent entry leaves out: the host member with its comma, or the whole
    /// metadata object (and the comma before it) when the host was its only member.
    var cut: Range<Int>?

    /// Reads `record` (without its `\n`).
    init(_ record: UnsafeRawBufferPointer) {
        host = nil
        cut = nil
        var reader = Reader(bytes: record)
        guard reader.take(0x5B), reader.skipString(), reader.take(0x2C), reader.skipString() else { return }
        let commaBeforeObject = reader.index
        guard reader.take(0x2C) else { return }
        reader.skipSpace()
        guard reader.take(0x7B) else { return }
        // Each member: where its key starts and where its value ends.
        var members: [(start: Int, end: Int, isHost: Bool, value: Range<Int>)] = []
        if !reader.take(0x7D) {
            repeat {
                reader.skipSpace()
                let start = reader.index
                guard reader.skipString() else { return }
                let isHost = record[start..<reader.index].elementsEqual(Self.hostKey)
                guard reader.take(0x3A) else { return }
                reader.skipSpace()
                let valueStart = reader.index
                guard reader.skipString() else { return }
                members.append((start, reader.index, isHost, valueStart..<reader.index))
            } while reader.take(0x2C)
            guard reader.take(0x7D) else { return }
        }
        let objectEnd = reader.index
        guard reader.take(0x5D), reader.atEnd() else { return }
        guard let index = members.firstIndex(where: \.isHost) else { return }
        let value = members[index].value
        host = value.count > 2 ? value : nil
        if members.count == 1 {
            cut = commaBeforeObject..<objectEnd
        } else if index == 0 {
            cut = members[0].start..<members[1].start
        } else {
            cut = members[index - 1].end..<members[index].end
        }
    }

    /// `"host"` as a key is written.
    private static let hostKey: [UInt8] = Array(#""host""#.utf8)

    /// The entry's FNV-1a hash (64 bits) over the bytes that are sent (the cut left out), mixed
    /// by MurmurHash3's 64-bit finaliser (FNV's low bits alone follow the low bits of the input
    /// bytes: 3,000 entries fell into 4 of 8 shards): the same entry hashes the same in every
    /// request and every run, whatever else the request holds. Never change the function: an
    /// entry resent by a newer streamup must land where the older one sent it.
    static func hash(_ record: UnsafeRawBufferPointer, leavingOut cut: Range<Int>?) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func add(_ range: Range<Int>) {
            for index in range {
                hash ^= UInt64(record[index])
                hash = hash &* 0x0000_0100_0000_01b3
            }
        }
        if let cut {
            add(0..<cut.lowerBound)
            add(cut.upperBound..<record.count)
        } else {
            add(0..<record.count)
        }
        hash ^= hash >> 33
        hash = hash &* 0xff51_afd7_ed55_8ccd
        hash ^= hash >> 33
        hash = hash &* 0xc4ce_b9fe_1a85_ec53
        hash ^= hash >> 33
        return hash
    }

    /// A cursor over a record's bytes that skips JSON white space before each token.
    ///
    /// Thread safety: a value type.
    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0D { index += 1 }
        }

        /// Takes `byte` (after white space); false when another byte is there.
        mutating func take(_ byte: UInt8) -> Bool {
            skipSpace()
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        /// Skips one JSON string (after white space), its escapes included; false when there is none.
        mutating func skipString() -> Bool {
            guard take(0x22) else { return false }
            while index < bytes.count {
                switch bytes[index] {
                case 0x5C: index += 2
                case 0x22:
                    index += 1
                    return true
                default: index += 1
                }
            }
            return false
        }

        mutating func atEnd() -> Bool {
            skipSpace()
            return index == bytes.count
        }
    }
}
