import StreamUpHTTP
import Testing

@testable import StreamUpSink

/// Recognising resumable-upload requests from their heads (the structured-field items they
/// use are tested with `StructuredFieldItem` in StreamUpHTTPTests).
@Suite struct ResumableRequestTests {
    private static func fields(_ pairs: [(String, String)]) -> [HTTPField] {
        pairs.map { HTTPField(name: $0.0, value: $0.1) }
    }

    private static func head(_ method: String, _ target: String, _ pairs: [(String, String)]) -> HTTPRequestHead {
        HTTPRequestHead(
            method: method, target: target, majorVersion: 1, minorVersion: 1, headers: fields(pairs),
            framing: .none, keepAlive: true, expectsContinue: false)
    }

    private static let version = ("Upload-Draft-Interop-Version", "6")
    private static let token = "0123456789abcdef0123456789abcdef"

    /// Each kind of protocol request, and the ones that are ordinary requests.
    @Test func requestsAreRecognised() throws {
        let path = "/uploads/\(Self.token)"
        let create = try ResumableRequest.identify(Self.head("POST", "/any", [Self.version, ("Upload-Complete", "?0")]))
        #expect(create == ResumableRequest(kind: .create(complete: false), version: 6))
        let append = try ResumableRequest.identify(
            Self.head(
                "PATCH", path,
                [
                    ("upload-draft-interop-version", "8"), ("Upload-Offset", "10"), ("Upload-Complete", "?0"),
                    ("Content-Type", "Application/Partial-Upload; x=y"),
                ]))
        #expect(append == ResumableRequest(kind: .append(token: Self.token, offset: 10, complete: false), version: 8))
        // Upload-Complete absent or unparsable on PATCH: the request completes the upload.
        let implicit = try ResumableRequest.identify(
            Self.head(
                "PATCH", path,
                [
                    Self.version, ("Upload-Offset", "0"), ("Upload-Complete", "yes"), ("Content-Type", "application/partial-upload"),
                ]))
        #expect(implicit?.kind == .append(token: Self.token, offset: 0, complete: true))
        #expect(try ResumableRequest.identify(Self.head("HEAD", path, [Self.version]))?.kind == .retrieveOffset(token: Self.token))
        #expect(try ResumableRequest.identify(Self.head("DELETE", path, [Self.version]))?.kind == .cancel(token: Self.token))
        #expect(try ResumableRequest.identify(Self.head("PUT", path, [Self.version]))?.kind == .methodNotAllowed)

        #expect(try ResumableRequest.identify(Self.head("POST", "/x", [("Upload-Complete", "?0")])) == nil)
        #expect(try ResumableRequest.identify(Self.head("POST", "/x", [Self.version])) == nil)
        #expect(try ResumableRequest.identify(Self.head("POST", "/x", [Self.version, ("Upload-Complete", "no")])) == nil)
        #expect(try ResumableRequest.identify(Self.head("PUT", "/x", [Self.version, ("Upload-Complete", "?1")])) == nil)
        #expect(try ResumableRequest.identify(Self.head("PATCH", path, [("Upload-Offset", "0")])) == nil)
    }

    /// Malformed protocol requests throw, naming what is wrong.
    @Test func malformedRequestsAreInvalid() {
        let path = "/uploads/\(Self.token)"
        let invalid: [HTTPRequestHead] = [
            Self.head("POST", "/x", [("Upload-Draft-Interop-Version", "5"), ("Upload-Complete", "?0")]),
            Self.head("HEAD", path, [("Upload-Draft-Interop-Version", "6, 6")]),
            Self.head("POST", "/x", [Self.version, ("Upload-Complete", "?0"), ("Upload-Offset", "3")]),
            Self.head("PATCH", path, [Self.version, ("Content-Type", "application/partial-upload")]),
            Self.head("PATCH", path, [Self.version, ("Upload-Offset", "-1"), ("Content-Type", "application/partial-upload")]),
            Self.head("PATCH", path, [Self.version, ("Upload-Offset", "0")]),
            Self.head("DELETE", path, [Self.version, ("Upload-Complete", "?1")]),
        ]
        for head in invalid {
            #expect(throws: ResumableRequest.Invalid.self, "\(head.method) \(head.headers)") {
                _ = try ResumableRequest.identify(head)
            }
        }
    }

    /// Only `/uploads/` followed by letters and digits is an upload URL.
    @Test func uploadTokens() {
        #expect(ResumableRequest.uploadToken(inTarget: "/uploads/abc123") == "abc123")
        #expect(ResumableRequest.uploadToken(inTarget: "/uploads/") == nil)
        #expect(ResumableRequest.uploadToken(inTarget: "/uploads/a?b=1") == nil)
        #expect(ResumableRequest.uploadToken(inTarget: "/uploads/../x") == nil)
        #expect(ResumableRequest.uploadToken(inTarget: "/upload/abc") == nil)
    }
}
