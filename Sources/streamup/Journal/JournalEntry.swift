import Foundation
import StreamUp

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

extension JournalEntry {
    /// The source of the entries of sequence-number ID `seqnumID` (``JournalProducer``).
    static func source(_ seqnumID: String) -> SourceID { JournalProducer.source(seqnumID) }
}
