import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One request without a streamed body (the resumable protocol's create, HEAD, DELETE and
/// completing PATCH), sent with the same session settings and delegate rules as a
/// ``StreamUploader``: redirects and authentication challenges are not followed, and their
/// 3xx/401 comes back as the answer.
///
/// Thread safety: stateless; callable from any task.
enum ControlRequest {
    /// Sends `method` to `configuration.url` with the configuration's header fields (and its
    /// content type, for POST and PATCH, whose body is empty) and returns the answer.
    /// - Throws: ``StreamUpError`` (`.transport`, `.cancelled`) when no answer came.
    static func send(_ method: String, _ configuration: UploadConfiguration,
                     onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }) async throws -> UploadResponse {
        let delegate = UploadTaskDelegate(body: nil, maxResponseBodyBytes: configuration.maxResponseBodyBytes, onEvent: onEvent)
        let session = StreamUploader.makeSession(configuration, delegate: delegate)
        defer { session.finishTasksAndInvalidate() }
        var request = StreamUploader.makeRequest(configuration)
        request.httpMethod = method
        if method == "POST" || method == "PATCH" {
            request.httpBody = Data()
        } else {
            request.setValue(nil, forHTTPHeaderField: "Content-Type")
        }
        var fields = StreamUploader.headerFields(configuration)
        if request.httpBody == nil {
            fields.removeAll { $0.name.caseInsensitiveCompare("Content-Type") == .orderedSame }
        } else {
            fields.append(.init(name: "Content-Length", value: "0"))
        }
        onEvent(.requestStarted(method: method, url: configuration.url, headers: fields))
        let task = session.dataTask(with: request)
        task.resume()
        return try await withTaskCancellationHandler {
            try await delegate.outcome().get()
        } onCancel: {
            task.cancel()
        }
    }
}
