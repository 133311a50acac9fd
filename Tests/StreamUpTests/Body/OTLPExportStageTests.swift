import Foundation
import Testing

@testable import StreamUp

/// OTLP records in protobuf: the bytes of the OpenTelemetry project's own Python classes
/// (`OTLPFixture`, made by `Tests/Receivers/otlp_fixture.py`), record by record and as one
/// `ExportLogsServiceRequest`, however the records arrive.
@Suite struct OTLPExportStageTests {
    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    private func transcoded(_ record: String) -> [UInt8] {
        Array(record.utf8).withUnsafeBytes { OTLPLogRecordTranscoder.logRecord($0) }
    }

    private static let export = OTLPExport(resourceAttributes: [("host.name", "h"), ("service.name", "api")])

    /// Each record as streamup writes it (times, severity, a string body with escapes, an
    /// empty body, attributes) is the LogRecord protobuf's JSON parser makes of it.
    @Test func eachRecordIsTheLogRecordOpenTelemetryEncodes() {
        for (record, expected) in zip(OTLPFixture.records, OTLPFixture.recordsHex) {
            #expect(hex(transcoded(record)) == expected, "\(record)")
        }
    }

    /// An app's own record with every field (a map body of every value kind, trace and span
    /// ids in hex, flags, an event name) and a key OTLP does not know, which is passed over.
    @Test func anAppRecordWithEveryFieldIsTheOpenTelemetryEncoding() {
        #expect(hex(transcoded(OTLPFixture.appRecord)) == OTLPFixture.appRecordHex)
    }

    /// The records, in pieces of any size and read through a buffer of any size, make one
    /// request with the resource and scope first: the bytes the Python classes encode.
    @Test func theRecordsMakeTheRequestOpenTelemetryEncodes() throws {
        let body = Array(OTLPFixture.records.map { $0 + "\n" }.joined().utf8)
        var random = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            var pieces: [[UInt8]] = []
            var rest = body[...]
            while !rest.isEmpty {
                let count = min(rest.count, Int.random(in: 1...200, using: &random))
                pieces.append(Array(rest.prefix(count)))
                rest = rest.dropFirst(count)
            }
            let stage = OTLPExportStage(over: BytesSource(pieces: pieces), export: Self.export, inputCapacity: Int.random(in: 1...300, using: &random))
            #expect(hex(try readAll(stage, bufferSize: Int.random(in: 1...100, using: &random))) == OTLPFixture.requestHex)
        }
        // The last record without its newline is a record too.
        #expect(hex(try readAll(OTLPExportStage(over: BytesSource(pieces: [Array(body.dropLast())]), export: Self.export))) == OTLPFixture.requestHex)
    }

    /// A record that is not an OTLP/JSON LogRecord (a raw line, bytes that are not UTF-8, an
    /// app's own JSON object) is still a record: its text as the body, made valid UTF-8; an escaped lone surrogate (a
    /// `surrogateescape` record) is U+FFFD, which a protobuf string must be.
    @Test func aRecordThatIsNotOTLPJSONGoesAsItsText() {
        let raw = Array("plain caf".utf8) + [0xE9] + Array(" {".utf8)
        let text = Array("plain caf\u{FFFD} {".utf8)
        #expect(raw.withUnsafeBytes { OTLPLogRecordTranscoder.logRecord($0) } == [0x2A, UInt8(text.count + 2), 0x0A, UInt8(text.count)] + text)
        let escaped = transcoded(#"{"body":{"stringValue":"caf\udce9"}}"#)
        #expect(escaped == [0x2A, 0x08, 0x0A, 0x06] + Array("caf\u{FFFD}".utf8))
        #expect(transcoded("") == [0x2A, 0x02, 0x0A, 0x00])
        let object = #"{"event":"started","n":1}"#
        #expect(transcoded(object) == [0x2A, UInt8(object.utf8.count + 2), 0x0A, UInt8(object.utf8.count)] + Array(object.utf8))
    }

    /// A request with no records is the resource and an empty scope: still a whole message.
    @Test func noRecordsIsAWholeRequest() throws {
        let body = try readAll(OTLPExportStage(over: BytesSource(pieces: []), export: Self.export))
        #expect(body == Self.export.head(recordBytes: 0) && body.first == 0x0A && Int(body[1]) == body.count - 2)
    }

    /// Varints as the wire format spells them: 7 bits a byte, low first; a negative int64 in ten.
    @Test func varintsAreTheWireFormats() {
        var writer = ProtobufWriter()
        writer.varint(300)
        writer.varint(UInt64(bitPattern: -1))
        #expect(writer.bytes == [0xAC, 0x02] + Array(repeating: 0xFF, count: 9) + [0x01])
        #expect([0, 127, 128, 16383, 16384, UInt64.max].map(ProtobufWriter.varintSize) == [1, 1, 2, 2, 3, 10])
    }
}
