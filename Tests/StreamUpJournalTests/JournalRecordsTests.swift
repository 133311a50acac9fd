import Foundation
import StreamUp
import StreamUpJournal
import Testing

/// Entries as records: their own time and host, the same bytes in every run, pieces in bounded
/// memory.
@Suite struct JournalRecordsTests {
    static func entry(_ seqnum: Int64, _ message: [UInt8], realtime: Int64 = 1_700_000_000_123_456, host: String? = "db-7") -> JournalEntry {
        JournalEntry(
            cursor: JournalStartTests.cursor("a", seqnum, time: realtime), message: message, realtime: realtime, host: host, fields: [("unit", "db.service")])
    }

    static func records(_ format: RecordFormat, shape: RecordShape = .object, maxRecordBytes: Int = 1 << 20) -> JournalRecords {
        JournalRecords(filter: nil) { host, fields, severity in
            try RecordFormatter(format: format, shape: shape, host: host ?? "this-machine", fields: fields, maxRecordBytes: maxRecordBytes, severity: severity)
        }
    }

    static func made(_ records: JournalRecords, _ entry: JournalEntry) throws -> [String] {
        var made: [String] = []
        try records.records(of: entry) { made.append(String(decoding: $0, as: UTF8.self)) }
        return made
    }

    /// An entry's priority is its OTLP record's severity, as the OpenTelemetry log data model
    /// maps syslog levels (err: ERROR, 17; notice: INFO2, 10); an entry without one has none,
    /// and the priority stays a field.
    @Test func anEntrysPriorityIsItsOTLPSeverity() throws {
        let otlp = Self.records(.ndjson, shape: .otlpLogRecord)
        func entry(_ seqnum: Int64, priority: String?) -> JournalEntry {
            var made = Self.entry(seqnum, Array("disk full".utf8))
            if let priority { made.fields.append(("priority", priority)) }
            return made
        }
        let err = try Self.made(otlp, entry(1, priority: "3"))
        #expect(err[0].contains(#""severityNumber":17,"severityText":"err","body":{"stringValue":"disk full"}"#), "\(err)")
        #expect(err[0].contains(#"{"key":"priority","value":{"stringValue":"3"}}"#), "\(err)")
        #expect(try Self.made(otlp, entry(2, priority: "5"))[0].contains(#""severityNumber":10,"severityText":"notice""#))
        #expect(try !Self.made(otlp, entry(3, priority: nil))[0].contains("severity"))
        #expect(try !Self.made(otlp, entry(4, priority: "9"))[0].contains("severity"))
        // Other shapes keep the priority as the field it is.
        #expect(try Self.made(Self.records(.ndjson), entry(5, priority: "3"))[0].contains(#""priority":"3","message":"disk full""#))
    }

    /// An entry's record time comes from its cursor (its microsecond, its number's last digits
    /// as nanoseconds): the same after a restart, whatever was read before it; the host is the
    /// entry's.
    @Test func anEntryHasTheSameRecordInEveryRun() throws {
        let loki = Self.records(.ndjson, shape: .lokiEntry)
        let same = Array("same line".utf8)
        // A run that read two entries of one microsecond, and one that starts at the second.
        let first = try Self.made(loki, Self.entry(41, same)) + Self.made(loki, Self.entry(42, same))
        let restarted = try Self.made(Self.records(.ndjson, shape: .lokiEntry), Self.entry(42, same))
        #expect(first[1] == restarted[0])
        #expect(first[0].hasPrefix(#"["1700000000123456041","same line""#), "\(first[0])")
        #expect(first[1].hasPrefix(#"["1700000000123456042","same line""#), "\(first[1])")
        let object = try Self.made(Self.records(.ndjson), Self.entry(42, Array("hello".utf8)))
        #expect(object == [#"{"time":"2023-11-14T22:13:20.123Z","host":"db-7","unit":"db.service","message":"hello"}"# + "\n"])
    }

    /// A message of megabytes that are not text goes in pieces, each a record within the limit,
    /// each handed on alone (the largest thing held is the message, once), with times one
    /// nanosecond apart.
    @Test func aHugeBinaryMessageGoesInPiecesWithinTheLimit() throws {
        let message = (0..<(2 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var pieces: [String] = []
        var largest = 0
        try Self.records(.ndjson, shape: .lokiEntry, maxRecordBytes: 64 << 10).records(of: Self.entry(1, message)) { record in
            pieces.append(String(decoding: record.prefix(24), as: UTF8.self))
            largest = max(largest, record.count)
        }
        #expect(largest <= (64 << 10) + 1)
        #expect(pieces.count >= 32, "\(pieces.count) pieces")
        #expect(pieces.prefix(2) == [#"["1700000000123456001",""#, #"["1700000000123456002",""#])
        var raw: [UInt8] = []
        try Self.records(.raw, maxRecordBytes: 256 << 10).records(of: Self.entry(1, message)) { raw += $0.dropLast() }
        #expect(raw == message)
    }

    /// The digest names how records are made: another format or size is another digest.
    @Test func theDigestChangesWithTheRecordOptions() throws {
        let ndjson = try Self.records(.ndjson).digest()
        #expect(try Self.records(.ndjson).digest() == ndjson)
        #expect(try Self.records(.raw).digest() != ndjson)
        #expect(try Self.records(.ndjson, maxRecordBytes: 4096).digest() != ndjson)
        #expect(try Self.records(.ndjson, shape: .lokiEntry).digest() != ndjson)
    }
}
