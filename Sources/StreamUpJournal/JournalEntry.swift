import StreamUp

/// One journal entry as streamup sends it: where it stands (its cursor), its message, its own
/// time and the fields that go along.
///
/// Thread safety: a value type.
package struct JournalEntry: Sendable {
    package var cursor: JournalCursor
    /// `MESSAGE`, its bytes (text or not).
    package var message: [UInt8]
    /// `__REALTIME_TIMESTAMP`: when the entry was written, in microseconds since 1970.
    package var realtime: Int64
    /// `_HOSTNAME`: the machine that wrote the entry (nil: none given).
    package var host: String?
    /// unit, priority, identifier and pid, those present, in that order.
    package var fields: [(name: String, value: String)]

    /// The journal fields that become record fields, and their names there.
    package static let sentFields = [("_SYSTEMD_UNIT", "unit"), ("PRIORITY", priorityField), ("SYSLOG_IDENTIFIER", "identifier"), ("_PID", "pid")]
    /// The record field of the entry's syslog priority (0 emerg … 7 debug), which also makes
    /// the records' severity (`RecordSeverity.syslog(priority:)`).
    package static let priorityField = "priority"

    package init(cursor: JournalCursor, message: [UInt8], realtime: Int64, host: String? = nil, fields: [(name: String, value: String)] = []) {
        self.cursor = cursor
        self.message = message
        self.realtime = realtime
        self.host = host
        self.fields = fields
    }

    /// The time of the entry's records in nanoseconds since 1970, the same in every run that
    /// reads it: its microsecond, and its sequence number's last three digits as nanoseconds, so
    /// entries of one sequence written in the same microsecond keep distinct times (Loki drops
    /// an entry whose stream, time and line equal one it holds).
    package var nanoseconds: Int64 {
        let microseconds = min(max(realtime, 0), (Int64.max - 999) / 1000)
        return microseconds * 1000 + cursor.seqnum % 1000
    }

    /// Where the entry stands for the uploader: its sequence, from its number to the next.
    package var mark: SourceMark {
        SourceMark(source: cursor.source, start: cursor.seqnum, end: cursor.seqnum + 1)
    }
}
