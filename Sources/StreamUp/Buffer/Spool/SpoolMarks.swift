#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The spool's two moving numbers, kept in the file `marks` and overwritten in place, so that
/// recording an acknowledgement needs no new disk space (a full file system can still be
/// drained): the acknowledged offset, and the start of the newest spool file (so a deleted
/// newest file is noticed). One line of fixed size with its own CRC:
/// `ACKNOWLEDGED NEWEST CRC\n` (20 digits, 20 digits or `-` padding, 8 hex digits).
///
/// Thread safety: a value type; its file is written by one caller at a time.
struct SpoolMarks: Equatable {
    var acknowledged: Int
    /// The start offset of the newest spool file; nil before the first.
    var newest: Int?

    static let size = 51

    var encoded: [UInt8] {
        let newestText = newest.map { Self.digits($0) } ?? String(repeating: "-", count: 20)
        let body = Array("\(Self.digits(acknowledged)) \(newestText)".utf8)
        let crc = body.withUnsafeBytes { Checksum.crc32($0) }
        return body + Array(" \(String(crc, radix: 16).leftPadded(to: 8))\n".utf8)
    }

    init(acknowledged: Int, newest: Int?) {
        self.acknowledged = acknowledged
        self.newest = newest
    }

    /// The marks in `bytes`, or nil when they are not exactly what ``encoded`` writes.
    init?(decoding bytes: [UInt8]) {
        guard bytes.count == Self.size, bytes.last == 0x0A else { return nil }
        let body = Array(bytes[..<41])
        let crcText = String(decoding: bytes[42..<50], as: UTF8.self)
        guard let crc = UInt32(crcText, radix: 16), crc == body.withUnsafeBytes({ Checksum.crc32($0) }) else { return nil }
        let fields = String(decoding: body, as: UTF8.self).split(separator: " ")
        guard fields.count == 2, let acknowledged = Int(fields[0]) else { return nil }
        self.acknowledged = acknowledged
        self.newest = fields[1].allSatisfy { $0 == "-" } ? nil : Int(fields[1])
        if fields[1].first != "-" && self.newest == nil { return nil }
    }

    static func digits(_ value: Int) -> String { String(value).leftPadded(to: 20, with: "0") }
}

extension String {
    /// The string with `character` in front, up to `width` characters.
    func leftPadded(to width: Int, with character: Character = "0") -> String {
        count >= width ? self : String(repeating: character, count: width - count) + self
    }
}
