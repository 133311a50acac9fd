import Foundation
import StreamUp
import StreamUpSystem

/// How journal entries become records: the message through the filter, then formatted with the
/// entry's own time (``JournalEntry/nanoseconds``: from its cursor, the same in every run), its
/// host (`_HOSTNAME`: the record's host, so that entries gathered from other machines are named
/// after theirs) and its fields. A message longer than a record holds is cut into pieces, each
/// a record of its own, as a long line is; each piece is handed on as soon as it is made, so an
/// entry costs its message and one record, however large.
///
/// Thread safety: the formatters (one per host and set of fields, kept for the next entry alike)
/// are used only on the producer's reading thread, behind a `Mutex` for the compiler's sake,
/// never contended.
package final class JournalRecords: Sendable {
    /// Makes the formatter of records from a host (nil: this machine) with fields, as severe as
    /// `severity` (the entry's priority; nil: none).
    package typealias MakeFormatter =
        @Sendable (_ host: String?, _ fields: [(name: String, value: String)], _ severity: RecordSeverity?) throws -> RecordFormatter

    private let filter: RecordFilter?
    private let makeFormatter: MakeFormatter
    private let formatters = Mutex<[String: RecordFormatter]>([:])

    /// - Parameters:
    ///   - filter: what leaves messages out or blanks parts of them (`--drop`, `--keep`, `--redact`).
    ///   - makeFormatter: the formatter of a host's records with fields (a raw one keeps the
    ///     message as it is, cut at its record size).
    package init(filter: RecordFilter?, makeFormatter: @escaping MakeFormatter) {
        self.filter = filter
        self.makeFormatter = makeFormatter
    }

    /// Checks that records can be made (the keys and fields fit), as a usage error at start.
    package func check() throws {
        _ = try formatter(host: "host", fields: JournalEntry.sentFields.map { (name: $0.1, value: "x") })
    }

    /// Hands each record of `entry` to `write`, in order; returns whether there was any (none:
    /// the filter left it out, or the receiver takes no blank message).
    @discardableResult
    package func records(of entry: JournalEntry, _ write: ([UInt8]) throws -> Void) throws -> Bool {
        var message = entry.message
        if let filter {
            switch message.withUnsafeBytes({ filter.apply($0) }) {
            case .unchanged: break
            case .dropped: return false
            case .replaced(let text): message = text
            }
        }
        var formatter = try formatter(host: entry.host, fields: entry.fields)
        let nanoseconds = entry.nanoseconds
        var wrote = false
        try message.withUnsafeBytes { whole in
            var rest = whole
            var piece: Int64 = 0
            while true {
                var length = formatter.pieceLength(rest, complete: true)
                // A raw record is the piece and its newline, within the record size as the buffer counts it.
                if formatter.format == .raw { length = min(length, max(1, formatter.maxRecordBytes - 1)) }
                var bytes: [UInt8] = []
                formatter.append(UnsafeRawBufferPointer(rebasing: rest[..<(rest.startIndex + length)]), fixedNanoseconds: nanoseconds + piece, to: &bytes)
                if !bytes.isEmpty {
                    try write(bytes)
                    wrote = true
                }
                guard length < rest.count else { return }
                rest = UnsafeRawBufferPointer(rebasing: rest[(rest.startIndex + length)...])
                piece += 1
            }
        }
        return wrote
    }

    /// A digest of how records are made (the record of a sample entry, the record size and the
    /// filter's rules): two runs with the same digest make the same records of the same entries.
    package func digest() throws -> UInt64 {
        let cursor = JournalCursor("s=00000000000000000000000000000000;i=1")
        var text = ""
        if let cursor {
            let sample = JournalEntry(
                cursor: cursor, message: Array("sample \u{e9}\t\u{1b} \"\\".utf8) + [0xFF], realtime: 1_000_000,
                host: "host", fields: JournalEntry.sentFields.map { (name: $0.1, value: "x") })
            try records(of: sample) { text += String(decoding: $0, as: UTF8.self) }
        }
        text += "\u{0}\(try formatter(host: nil, fields: []).maxRecordBytes)\u{0}\(filter.map { "\($0.rules)" } ?? "")"
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }

    /// The formatter of records from `host` with `fields`.
    private func formatter(host: String?, fields: [(name: String, value: String)]) throws -> RecordFormatter {
        let key = ([host ?? ""] + fields.map { "\($0.name)=\($0.value)" }).joined(separator: "\u{0}")
        if let known = formatters.withLock({ $0[key] }) { return known }
        let priority = fields.first { $0.name == JournalEntry.priorityField }?.value
        let made = try makeFormatter(host, fields, priority.flatMap { RecordSeverity.syslog(priority: $0) })
        formatters.withLock { cache in
            if cache.count >= 4_096 { cache.removeAll() }
            cache[key] = made
        }
        return made
    }
}
