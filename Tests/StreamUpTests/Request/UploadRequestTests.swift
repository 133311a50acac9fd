import Foundation
import Testing

@testable import StreamUp

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `UploadRequest.make`, the one place a request's header fields are built: what `-v` lists
/// (``UploadEvent/requestStarted(method:url:headers:)``) is what the request carries.
@Suite struct UploadRequestTests {
    static let purposes: [UploadRequest.Purpose] = [
        .segment(stream: "s", offset: 10), .live, .create(stream: "s", offset: 0), .checkOffset(upload: "https://logs.example/up/1"),
        .append(upload: "https://logs.example/up/1", offset: 5), .complete(upload: "https://other.example/up/1", offset: 7),
    ]

    /// Every field listed is on the request with that value, and every field the request
    /// carries with a value is listed: a blank value (`Expect`, a segment's `Transfer-Encoding`)
    /// is libcurl's way to send none, and URLSession adds an empty body's `Content-Length: 0`.
    @Test(arguments: purposes)
    func theFieldsListedAreTheFieldsSent(purpose: UploadRequest.Purpose) {
        var configuration = UploadConfiguration(url: URL(string: "https://logs.example/ingest")!)
        configuration.headers = [.init(name: "Authorization", value: "Bearer t"), .init(name: "X-Team", value: "a")]
        let bodyLength: Int? =
            switch purpose {
            case .segment, .append: 42
            case .live, .create, .checkOffset, .complete: nil
            }
        let (request, fields) = UploadRequest.make(purpose, configuration, bodyLength: bodyLength)
        let sent = (request.allHTTPHeaderFields ?? [:]).filter { !$0.value.trimmingCharacters(in: .whitespaces).isEmpty }
        var listed: [String: String] = [:]
        for field in fields where !(purpose == .live && field.name == "Transfer-Encoding") {
            listed[field.name] = field.value
        }
        if request.httpBody == Data() { #expect(listed.removeValue(forKey: "Content-Length") == "0") }
        #expect(
            Dictionary(uniqueKeysWithValues: sent.map { ($0.key.lowercased(), $0.value) })
                == Dictionary(uniqueKeysWithValues: listed.map { ($0.key.lowercased(), $0.value) }))
    }

    /// The credentials go only to the origin the caller named: a resumable upload elsewhere
    /// gets the caller's other fields, not its `Authorization`.
    @Test func anUploadAtAnotherOriginGetsNoCredentials() {
        var configuration = UploadConfiguration(url: URL(string: "https://logs.example/ingest")!)
        configuration.headers = [.init(name: "Authorization", value: "Bearer t"), .init(name: "X-Team", value: "a")]
        let here = UploadRequest.make(.append(upload: "https://logs.example:443/up/1", offset: 0), configuration, bodyLength: 1).request
        let there = UploadRequest.make(.append(upload: "https://other.example/up/1", offset: 0), configuration, bodyLength: 1).request
        #expect(here.value(forHTTPHeaderField: "Authorization") == "Bearer t")
        #expect(there.value(forHTTPHeaderField: "Authorization") == nil)
        #expect(there.value(forHTTPHeaderField: "X-Team") == "a")
    }
}
