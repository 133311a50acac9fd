import Foundation
import Testing

@testable import StreamUp

/// ``MultipartForm`` and the stage that keeps its boundary out of the records
/// (``ForbiddenSequenceStage``).
@Suite struct MultipartFormTests {
    /// The body is text fields, then the file part with the records, then the closing delimiter,
    /// as RFC 7578 writes it; names and file name are escaped as the HTML form encoding does.
    @Test func envelopeIsTheFormAroundTheRecords() throws {
        let form = try MultipartForm(
            fileField: "up\"load", filename: "app.log", fileContentType: "text/plain",
            textFields: [.init(name: "tag", value: "web-1"), .init(name: "note", value: "two\r\nlines")], boundary: "B0undary")
        #expect(form.contentType == "multipart/form-data; boundary=B0undary")
        let body = try readAll(EnvelopeStage(over: BytesSource(pieces: [Array("one\ntwo\n".utf8)]), envelope: form.envelope()))
        #expect(
            String(decoding: body, as: UTF8.self) == """
                --B0undary\r
                Content-Disposition: form-data; name="tag"\r
                \r
                web-1\r
                --B0undary\r
                Content-Disposition: form-data; name="note"\r
                \r
                two\r
                lines\r
                --B0undary\r
                Content-Disposition: form-data; name="up%22load"; filename="app.log"\r
                Content-Type: text/plain\r
                \r
                one
                two
                \r
                --B0undary--\r

                """)
    }

    /// An envelope inside the file part (a preset's JSON array) keeps its own framing.
    @Test func innerEnvelopeGoesInsideTheFilePart() throws {
        let form = try MultipartForm(fileField: "f", filename: "a.json", boundary: "XX")
        let body = try readAll(EnvelopeStage(over: BytesSource(pieces: [Array("1\n2\n".utf8)]), envelope: form.envelope(around: .jsonArray)))
        #expect(String(decoding: body, as: UTF8.self).hasSuffix("\r\n\r\n[1,2]\r\n--XX--\r\n"))
    }

    /// A random boundary is `streamup-` and 32 letters and digits, a new one each time.
    @Test func randomBoundaryHas190Bits() throws {
        let boundaries = (0..<100).map { _ in MultipartForm.randomBoundary() }
        #expect(Set(boundaries).count == 100)
        for boundary in boundaries {
            #expect(boundary.hasPrefix("streamup-") && boundary.count == 41)
            #expect(boundary.dropFirst(9).allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })
        }
        #expect(try MultipartForm(fileField: "f", filename: "x").boundary.hasPrefix("streamup-"))
    }

    /// A given boundary that is not one (too long, a space) or that occurs in a field is refused.
    @Test func givenBoundaryIsChecked() {
        #expect(throws: StreamUpError.self) { try MultipartForm(fileField: "f", filename: "x", boundary: String(repeating: "a", count: 71)) }
        #expect(throws: StreamUpError.self) { try MultipartForm(fileField: "f", filename: "x", boundary: "has space") }
        #expect(throws: StreamUpError.self) {
            try MultipartForm(fileField: "f", filename: "x", textFields: [.init(name: "n", value: "--XYZ--")], boundary: "XYZ")
        }
    }

    /// Records that hold the boundary fail the body before those bytes are handed out, also
    /// when the boundary is split across reads; bytes before it pass unchanged.
    @Test(arguments: [[Array("ok\nhas XYZ inside\n".utf8)], [Array("ok\nhas X".utf8), Array("Y".utf8), Array("Z inside\n".utf8)]])
    func recordsHoldingTheSequenceFail(pieces: [[UInt8]]) throws {
        let stage = ForbiddenSequenceStage(over: BytesSource(pieces: pieces), sequence: Array("XYZ".utf8), message: "boundary in records")
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)
        defer { buffer.deallocate() }
        var passed: [UInt8] = []
        let error = #expect(throws: StreamUpError.self) {
            while case .bytes(let count) = try stage.read(into: buffer, blocking: true) { passed += buffer.prefix(count) }
        }
        #expect(error?.description == "boundary in records" && error?.code == .invalidConfiguration)
        #expect(!passed.withUnsafeBytes { SequenceSearch(Array("XYZ".utf8)).occurs(in: $0) })
    }

    /// The search finds the needle anywhere (start, end, after near-misses) and nowhere else.
    @Test func searchFindsTheNeedleExactly() {
        let search = SequenceSearch(Array("abcab".utf8))
        for (text, found) in [
            ("abcab", true), ("xabcab", true), ("abcabx", true), ("ababcabab", true), ("abcaabcb", false), ("abca", false), ("", false), ("bcabcabc", true),
        ] {
            #expect(Array(text.utf8).withUnsafeBytes { search.occurs(in: $0) } == found, "\(text)")
        }
        let one = SequenceSearch(Array("z".utf8))
        #expect(Array("abz".utf8).withUnsafeBytes { one.occurs(in: $0) } && !Array("abc".utf8).withUnsafeBytes { one.occurs(in: $0) })
    }

    /// Records without it pass unchanged, however they are split, including near-misses.
    @Test func recordsWithoutTheSequencePass() throws {
        let input = Array("XY\nYZ\nX YZ\nXXY\nZZ".utf8)
        for split in 1..<input.count {
            let stage = ForbiddenSequenceStage(
                over: BytesSource(pieces: [Array(input[..<split]), Array(input[split...])]), sequence: Array("XYZ".utf8), message: "")
            #expect(try readAll(stage, bufferSize: 3) == input)
        }
    }
}
