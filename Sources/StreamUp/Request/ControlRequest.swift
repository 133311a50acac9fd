import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request without a streamed body (the resumable protocol's create, HEAD and completing
/// PATCH), built with the same header rules as a segment: POST and PATCH carry an empty body
/// (`Content-Length: 0`), HEAD carries no content type.
///
/// Thread safety: a value type.
struct ControlRequest {
    let request: URLRequest
    /// The header fields as sent, for `-v`.
    let fields: [UploadConfiguration.Header]

    init(_ method: String, _ configuration: UploadConfiguration) {
        var request = UploadRequest.makeRequest(configuration)
        request.httpMethod = method
        var fields = UploadRequest.headerFields(configuration)
        if method == "POST" || method == "PATCH" {
            request.httpBody = Data()
            fields.append(.init(name: "Content-Length", value: "0"))
        } else {
            request.setValue(nil, forHTTPHeaderField: "Content-Type")
            fields.removeAll { $0.name.caseInsensitiveCompare("Content-Type") == .orderedSame }
        }
        self.request = request
        self.fields = fields
    }
}
