import Foundation
import Testing

@testable import StreamUpSink

/// Response bytes and the JSON summary.
struct HTTPResponseTests {
    /// A response carries its exact length, the JSON type and the connection decision.
    @Test func responseHasExactLengthTypeAndConnection() {
        let text = String(decoding: HTTPResponse.json(status: 431, body: "{}\n", close: true), as: UTF8.self)
        #expect(
            text == "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: application/json\r\n"
                + "Content-Length: 3\r\nConnection: close\r\n\r\n{}\n")
    }

    /// The summary is valid JSON even for hostile paths, and leaves out a missing file.
    @Test func summaryIsValidJSONForAnyPath() throws {
        let event = SinkRequestEvent(
            sequence: 3, method: "POST", path: "/a\"b\\c\u{1}", version: "HTTP/1.1", headers: [], trailers: [],
            bodyByteCount: 9, sha256: nil, body: nil, storedFile: nil, duration: .zero, status: 200,
            isComplete: true, peer: "127.0.0.1:1", failure: nil)
        let text = HTTPResponse.summary(of: event)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["path"] as? String == "/a\"b\\c\u{1}")
        #expect(object["seq"] as? Int == 3)
        #expect(object["sha256"] is NSNull)
        #expect(object["file"] == nil)
    }
}
