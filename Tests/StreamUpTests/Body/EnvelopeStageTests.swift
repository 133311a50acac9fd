import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

@Suite struct EnvelopeStageTests {
    private struct LowerFailed: Error {}

    /// The body the envelope definition describes, built directly from whole records (each given
    /// without its `\n`; `lastTerminated` says whether the last one had one).
    private func expectedBody(_ envelope: Envelope, _ records: [[UInt8]], lastTerminated: Bool = true) -> [UInt8] {
        var body = envelope.head
        for (index, record) in records.enumerated() {
            if index > 0 { body += envelope.separator }
            body += envelope.recordPrefix + record
            if envelope.keepsNewline && (lastTerminated || index < records.count - 1) { body.append(0x0A) }
            body += envelope.recordSuffix
        }
        return body + envelope.tail
    }

    private func lines(_ records: [String]) -> [UInt8] {
        Array(records.map { $0 + "\n" }.joined().utf8)
    }

    /// NDJSON records become one JSON array that Python parses to the same documents.
    @Test func jsonArrayWrapsRecordsInBrackets() throws {
        let records = [#"{"a":1}"#, #"{"b":"two"}"#, #"[3]"#]
        let body = try readAll(EnvelopeStage(over: BytesSource(pieces: [lines(records)]), envelope: .jsonArray))
        #expect(String(decoding: body, as: UTF8.self) == #"[{"a":1},{"b":"two"},[3]]"#)
        let parsed = try ExternalTool.python(
            "import sys, json; print(json.dumps(json.loads(sys.stdin.buffer.read())))", input: body)
        #expect(parsed.status == 0, "\(parsed.errorText)")
        #expect(String(decoding: parsed.output, as: UTF8.self) == #"[{"a": 1}, {"b": "two"}, [3]]"# + "\n")
    }

    /// An Elasticsearch `_bulk` body puts the action line before each document and ends every
    /// line, the last included, with `\n`.
    @Test func elasticsearchBulkPrefixesEachDocumentWithItsAction() throws {
        let records = [#"{"message":"one"}"#, #"{"message":"two"}"#]
        let body = try readAll(EnvelopeStage(over: BytesSource(pieces: [lines(records)]), envelope: .elasticsearchBulk()))
        #expect(
            String(decoding: body, as: UTF8.self) == """
                {"create":{}}
                {"message":"one"}
                {"create":{}}
                {"message":"two"}

                """)
    }

    /// In a segment each action names its document by the stream and the record's offset, so a
    /// record cut into another segment (a resend, a restart from the spool) keeps its `_id`.
    @Test func elasticsearchBulkNamesEachDocumentByItsOffset() throws {
        let records = [#"{"message":"one"}"#, #"{"message":"two é"}"#, #"{"message":"three"}"#]
        let input = lines(records)
        // The lower stage hands its bytes over in small pieces: offsets count across them.
        let pieces = stride(from: 0, to: input.count, by: 7).map { Array(input[$0..<min($0 + 7, input.count)]) }
        let stage = EnvelopeStage(
            over: BytesSource(pieces: pieces), envelope: .elasticsearchBulk(), origin: StreamOrigin(streamID: "s\"1", offset: 1000),
            inputCapacity: 5)
        let body = String(decoding: try readAll(stage), as: UTF8.self)
        let second = 1000 + records[0].utf8.count + 1
        let third = second + records[1].utf8.count + 1
        #expect(
            body == """
                {"create":{"_id":"s\\"1-1000"}}
                \(records[0])
                {"create":{"_id":"s\\"1-\(second)"}}
                \(records[1])
                {"create":{"_id":"s\\"1-\(third)"}}
                \(records[2])

                """)
        // The same records cut from the second one on: the same names.
        let recut = EnvelopeStage(
            over: BytesSource(pieces: [Array(input[(second - 1000)...])]), envelope: .elasticsearchBulk(),
            origin: StreamOrigin(streamID: "s\"1", offset: second))
        #expect(String(decoding: try readAll(recut), as: UTF8.self).hasPrefix(#"{"create":{"_id":"s\"1-\#(second)"}}"#))
    }

    /// A multipart/form-data file part carries the records unchanged; Python's email parser
    /// finds the part, its file name and its exact bytes.
    @Test func multipartFilePartCarriesRecordsUnchanged() throws {
        let input = LogLines.text(count: 50) + Array("last line without newline".utf8)
        let envelope = Envelope.multipartFile(
            boundary: "streamup-7f3a9c", name: "upload", filename: "app\".log", contentType: "text/plain")
        let body = try readAll(EnvelopeStage(over: BytesSource(pieces: [input]), envelope: envelope))
        #expect(body == envelope.head + input + envelope.tail)

        let program = """
            import sys, email, email.policy
            body = sys.stdin.buffer.read()
            head = b"Content-Type: multipart/form-data; boundary=streamup-7f3a9c\\r\\n\\r\\n"
            message = email.message_from_bytes(head + body, policy=email.policy.HTTP)
            parts = list(message.iter_parts())
            assert len(parts) == 1, len(parts)
            sys.stderr.write(parts[0].get_filename() + "|" + parts[0].get_param("name", header="content-disposition"))
            sys.stdout.buffer.write(parts[0].get_payload(decode=True))
            """
        let parsed = try ExternalTool.python(program, input: body)
        #expect(parsed.status == 0)
        #expect(parsed.errorText == "app%22.log|upload")
        #expect(parsed.output == input)
    }

    /// A body without records is the head and the tail.
    @Test(arguments: [Envelope.jsonArray, .elasticsearchBulk(), .multipartFile(boundary: "b", filename: "f")])
    func emptyBodyIsHeadAndTail(envelope: Envelope) throws {
        let body = try readAll(EnvelopeStage(over: BytesSource(pieces: []), envelope: envelope))
        #expect(body == envelope.head + envelope.tail)
    }

    /// A last record without its `\n` is still closed, with its suffix, before the tail.
    @Test func recordCutByTheEndIsClosed() throws {
        let body = try readAll(EnvelopeStage(over: BytesSource(pieces: [Array("1\n2".utf8)]), envelope: .jsonArray))
        #expect(body == Array("[1,2]".utf8))
    }

    /// Records split across lower reads at random points, read back in random sizes with pauses
    /// and non-blocking reads, give exactly the body the envelope describes.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6])
    func randomSplitsGiveTheSameBody(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        // Records of 0 to 300 bytes (empty ones included), any byte but `\n`.
        let records: [[UInt8]] = (0..<400).map { _ in
            (0..<Int.random(in: 0...300, using: &random)).map { _ -> UInt8 in
                var byte = UInt8.random(in: 0...255, using: &random)
                if byte == 0x0A { byte = 0x0B }
                return byte
            }
        }
        let lastTerminated = seed % 2 == 0
        var input: [UInt8] = records.flatMap { $0 + [0x0A] }
        if !lastTerminated { input.removeLast() }
        let envelope = Envelope(
            head: Array("HEAD{".utf8), recordPrefix: Array("<".utf8), recordSuffix: Array(">".utf8),
            separator: Array(",\n".utf8), tail: Array("}TAIL".utf8), keepsNewline: seed % 3 == 0)
        let pieces = random.split(input, maximum: Int.random(in: 1...700, using: &random))
        let source = BytesSource(pieces: pieces, pausesAfter: Set(pieces.indices.filter { $0 % 5 == 0 }))
        let stage = EnvelopeStage(over: source, envelope: envelope, inputCapacity: Int.random(in: 1...512, using: &random))

        var body: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        reading: while true {
            let size = Int.random(in: 1...buffer.count, using: &random)
            let blocking = Bool.random(using: &random)
            let read = try buffer.withUnsafeMutableBytes {
                try stage.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[..<size]), blocking: blocking)
            }
            switch read {
            case .bytes(let count): body += buffer.prefix(count)
            case .end: break reading
            case .wouldBlock:
                #expect(!blocking)
                source.resume()
            }
        }
        #expect(body == expectedBody(envelope, records, lastTerminated: lastTerminated))
    }

    /// A record's suffix goes out as soon as its `\n` is read, not with the next record.
    @Test func recordIsClosedAsSoonAsItsNewlineArrives() throws {
        let source = BytesSource(pieces: [Array("{\"a\":1}\n".utf8), Array("{\"b\":2}\n".utf8)], pausesAfter: [0])
        let stage = EnvelopeStage(over: source, envelope: .elasticsearchBulk())
        let first = try readAvailable(stage)
        #expect(String(decoding: first.bytes, as: UTF8.self) == "{\"create\":{}}\n{\"a\":1}\n")
        #expect(!first.ended)
    }

    /// A failure of the lower stage reaches the reader.
    @Test func lowerFailureIsThrown() {
        let stage = EnvelopeStage(over: BytesSource(pieces: [Array("a\n".utf8)], failure: LowerFailed()), envelope: .jsonArray)
        #expect(throws: LowerFailed.self) { _ = try readAll(stage) }
    }
}
