import StreamUpJournal
import Testing

/// journalctl's export output read as it arrives, however its reads fall.
@Suite struct JournalExportReaderTests {
    static let cursor = "s=25542b9351e7442194bf7bafb90af8e5;i=7;b=0123456789abcdef0123456789abcdef;m=7;t=5f5e100;x=1"

    /// One entry in export format: text fields, then `MESSAGE` in the binary form.
    static func export(message: [UInt8], cursor: String = cursor, extra: String = "") -> [UInt8] {
        var bytes = Array("__CURSOR=\(cursor)\n__REALTIME_TIMESTAMP=100000007\n__MONOTONIC_TIMESTAMP=7\n_BOOT_ID=0123\n".utf8)
        bytes += Array("_HOSTNAME=db-7\nPRIORITY=3\n\(extra)_SYSTEMD_UNIT=db.service\nSYSLOG_IDENTIFIER=postgres\n_PID=42\n".utf8)
        bytes += Array("MESSAGE\n".utf8)
        withUnsafeBytes(of: UInt64(message.count).littleEndian) { bytes += $0 }
        return bytes + message + Array("\n_UID=0\n\n".utf8)
    }

    private static func read(_ output: [UInt8], by size: Int) -> [JournalEntry] {
        var reader = JournalExportReader()
        var entries: [JournalEntry] = []
        var start = 0
        while start < output.count {
            let end = min(output.count, start + size)
            output[start..<end].withUnsafeBytes { reader.take($0) { entries.append($0) } }
            start = end
        }
        return entries
    }

    @Test(arguments: [1, 3, 7, 64, 1 << 20])
    func anEntryComesWholeWhereverTheReadsFall(size: Int) {
        let message = Array("tab\there\nand a newline".utf8) + [0xFF, 0x00]
        let output = Self.export(message: message) + Array("__CURSOR=\(Self.cursor.replacingOccurrences(of: "i=7", with: "i=8"))\nMESSAGE=second\n\n".utf8)
        let entries = Self.read(output, by: size)
        #expect(entries.count == 2)
        let first = entries[0]
        #expect(first.message == message)
        #expect(first.cursor.seqnum == 7 && first.realtime == 100_000_007 && first.host == "db-7")
        #expect(first.fields.map(\.name) == ["unit", "priority", "identifier", "pid"])
        #expect(first.fields.map(\.value) == ["db.service", "3", "postgres", "42"])
        #expect(entries[1].message == Array("second".utf8) && entries[1].cursor.seqnum == 8 && entries[1].host == nil)
    }

    @Test func anEntryWithoutACursorIsPassedOverAndTheNextReadWhole() {
        let output = Array("MESSAGE=no cursor\n\n".utf8) + Self.export(message: Array("kept".utf8))
        #expect(Self.read(output, by: 5).map { String(decoding: $0.message, as: UTF8.self) } == ["kept"])
    }

    /// A field streamup does not send is never kept, however long; the fields it sends are kept
    /// up to their limit; the message whole.
    @Test func onlyTheMessageIsKeptWhole() {
        let huge = String(repeating: "x", count: 200_000)
        let output = Self.export(message: Array(repeating: 0x61, count: 300_000), extra: "COREDUMP=\(huge)\n_HOSTNAME=\(huge)\n")
        let entries = Self.read(output, by: 4096)
        #expect(entries.count == 1)
        #expect(entries.first?.message.count == 300_000)
        // The first _HOSTNAME is kept, the second adds up to the limit at most.
        #expect((entries.first?.host?.utf8.count ?? 0) <= 64 << 10)
    }
}
