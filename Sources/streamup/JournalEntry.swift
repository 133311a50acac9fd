import Foundation
import StreamUp
import StreamUpSystem

/// One journal entry as `journalctl --output=json` writes it: the message, its own time, where
/// it stands in the journal and the fields streamup sends along.
///
/// A field journalctl could not write as text (bytes that are not UTF-8) is an array of byte
/// values; the message is taken from it as bytes.
///
/// Thread safety: a value type.
struct JournalEntry {
    var message: [UInt8]
    /// `__REALTIME_TIMESTAMP` in milliseconds since 1970 (when the entry was written).
    var milliseconds: Int64
    /// The cursor's sequence-number ID and number (`s=`, `i=`).
    var seqnumID: String
    var seqnum: Int64
    /// `_HOSTNAME`.
    var host: String?
    /// unit, priority, identifier and pid, those present, in that order.
    var fields: [(name: String, value: String)]

    /// The journal fields that become record fields, and their names there.
    static let sentFields = [("_SYSTEMD_UNIT", "unit"), ("PRIORITY", "priority"), ("SYSLOG_IDENTIFIER", "identifier"), ("_PID", "pid")]

    /// The entry on one line of output; nil for a line that is not one (with no cursor).
    init?(json line: [UInt8]) {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any],
            let cursor = object["__CURSOR"] as? String
        else { return nil }
        var seqnumID: String?
        var seqnum: Int64?
        for part in cursor.split(separator: ";") {
            if part.hasPrefix("s=") { seqnumID = String(part.dropFirst(2)) }
            if part.hasPrefix("i=") { seqnum = Int64(part.dropFirst(2), radix: 16) }
        }
        guard let seqnumID, let seqnum else { return nil }
        self.seqnumID = seqnumID
        self.seqnum = seqnum
        message = Self.bytes(object["MESSAGE"]) ?? []
        milliseconds = ((object["__REALTIME_TIMESTAMP"] as? String).flatMap { Int64($0) } ?? 0) / 1000
        host = object["_HOSTNAME"] as? String
        fields = Self.sentFields.compactMap { key, name in (object[key] as? String).map { (name: name, value: $0) } }
    }

    /// A field's bytes: its text, or the byte values journalctl writes for one that is not
    /// text (nil for none, or a field too large that it left out).
    static func bytes(_ value: Any?) -> [UInt8]? {
        if let text = value as? String { return Array(text.utf8) }
        if let values = value as? [Any] { return values.compactMap { ($0 as? NSNumber).map { UInt8(truncatingIfNeeded: $0.intValue) } } }
        return nil
    }
}

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

extension JournalEntry {
    /// The source of the entries of sequence-number ID `seqnumID` (``JournalProducer``).
    static func source(_ seqnumID: String) -> SourceID { JournalProducer.source(seqnumID) }
}
