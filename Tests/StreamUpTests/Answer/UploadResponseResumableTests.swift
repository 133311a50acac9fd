import Foundation
import Testing

@testable import StreamUp

/// What the reliable uploader reads from an answer to a resumable upload: `Upload-Offset` and
/// `Upload-Complete`, as RFC 9651 items (one reader for client and sink, in StreamUpHTTP).
@Suite struct UploadResponseResumableTests {
    private static func answer(_ headers: [String: String]) -> UploadResponse {
        UploadResponse(statusCode: 204, headers: headers, body: Data(), bytesSent: 0)
    }

    /// The client's old reader refused parameters and took `+7`; an Item may carry parameters
    /// and an Integer has no plus sign (RFC 9651 §3.3.1, §4.2.3). A negative offset is none.
    @Test func offsetIsANonNegativeStructuredInteger() {
        #expect(Self.answer(["upload-offset": "42"]).uploadOffset == 42)
        #expect(Self.answer(["Upload-Offset": "42;unit=bytes"]).uploadOffset == 42)
        #expect(Self.answer(["Upload-Offset": "+7"]).uploadOffset == nil)
        #expect(Self.answer(["Upload-Offset": "-1"]).uploadOffset == nil)
        #expect(Self.answer([:]).uploadOffset == nil)
    }

    /// `Upload-Complete` is a Boolean, parameters allowed; anything else is no answer.
    @Test func completeIsAStructuredBoolean() {
        #expect(Self.answer(["Upload-Complete": "?1"]).uploadComplete == true)
        #expect(Self.answer(["Upload-Complete": "?0;reason=x"]).uploadComplete == false)
        #expect(Self.answer(["Upload-Complete": "true"]).uploadComplete == nil)
        #expect(Self.answer([:]).uploadComplete == nil)
    }
}
