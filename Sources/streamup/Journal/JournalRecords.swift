import Foundation
import StreamUp
import StreamUpSystem

/// How journal entries become records: the message through the filter, then formatted with the
/// entry's time, host and fields (a formatter per set of those, kept for the next entry alike);
/// raw records are the message and a newline.
///
/// Thread safety: the formatters are used only on the producer's reading thread (`Mutex` for
/// the compiler's sake, never contended); ``seqnumIDs`` is a `Mutex` read by the uploader.
final class JournalRecords: Sendable {
    private let options: UploadOptions
    private let formatters = Mutex<[String: RecordFormatter]>([:])
    /// The sequence-number ID of each source seen, for the saved state's path.
    let seqnumIDs = Mutex<[SourceID: String]>([:])

    init(_ options: UploadOptions) {
        self.options = options
    }

    /// Checks that records can be made (the keys and fields fit), as a usage error at start.
    func check() throws {
        _ = try formatter(host: "host", fields: JournalEntry.sentFields.map { (name: $0.1, value: "x") })
    }

    /// The bytes of `entry`'s record (empty: the filter left it out, or a receiver takes no
    /// blank message) and its mark.
    func record(of entry: JournalEntry) -> (bytes: [UInt8], mark: SourceMark?) {
        let source = JournalEntry.source(entry.seqnumID)
        seqnumIDs.withLock { if $0[source] == nil { $0[source] = entry.seqnumID } }
        let mark = SourceMark(source: source, start: entry.seqnum, end: entry.seqnum + 1)
        var message = entry.message
        if let filter = options.records.filter {
            switch message.withUnsafeBytes({ filter.apply($0) }) {
            case .unchanged: break
            case .dropped: return ([], mark)
            case .replaced(let text): message = text
            }
        }
        guard var formatter = try? formatter(host: entry.host, fields: entry.fields) else {
            return (message + [0x0A], mark)
        }
        var bytes: [UInt8] = []
        message.withUnsafeBytes { whole in
            var rest = whole
            while true {
                let length = formatter.pieceLength(rest, complete: true)
                formatter.append(UnsafeRawBufferPointer(rebasing: rest[..<(rest.startIndex + length)]), milliseconds: entry.milliseconds, to: &bytes)
                guard length < rest.count else { return }
                rest = UnsafeRawBufferPointer(rebasing: rest[(rest.startIndex + length)...])
            }
        }
        return (bytes, mark)
    }

    /// The formatter of records from `host` with `fields` (the preset's or `--format`'s; raw
    /// without either: a record per message, cut at `--max-record`).
    private func formatter(host: String?, fields: [(name: String, value: String)]) throws -> RecordFormatter {
        let key = ([host ?? ""] + fields.map { "\($0.name)=\($0.value)" }).joined(separator: "\u{0}")
        if let known = formatters.withLock({ $0[key] }) { return known }
        let made = try options.multilineFormatter(extra: fields, host: host)
        formatters.withLock { cache in
            if cache.count >= 4_096 { cache.removeAll() }
            cache[key] = made
        }
        return made
    }
}
