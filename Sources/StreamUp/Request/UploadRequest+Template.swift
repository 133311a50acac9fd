import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension UploadRequest {
    /// What is the same for every plain segment to one endpoint, built once: the request (its
    /// URL in URLSession's spelling, method, timeout, header fields) and its fields as a person
    /// reads them, redacted. Each segment then sets only its place in the stream and its
    /// length. Only for a configuration whose fields are fixed (no header provider, whose
    /// fields, credentials among them, are made anew for each request).
    ///
    /// Thread safety: a value type.
    struct SegmentTemplate: Sendable {
        private let request: URLRequest
        private let shownURL: URL
        private let shownFields: [UploadConfiguration.Header]
        private let method: String
        /// Whether the body is the stream as it is: only then do offsets name body bytes.
        private let identity: Bool

        /// The template for segments sent with `configuration` (its URL the endpoint's), or nil
        /// when its fields are made per request.
        init?(_ configuration: UploadConfiguration) {
            guard configuration.headerProvider == nil else { return nil }
            request = UploadRequest.makeRequest(configuration)
            method = configuration.method
            identity = configuration.body.isIdentity
            // As `UploadEvent.redacted` shows them, once.
            let shown = UploadEvent.requestStarted(
                method: method, url: request.url ?? configuration.url, headers: UploadRequest.headerFields(configuration))
            guard case .requestStarted(_, let url, let fields) = shown.redacted.detail else { return nil }
            shownURL = url
            shownFields = fields
        }

        /// The request for the segment from `offset` of `stream` with a body of `bodyLength`
        /// bytes, as ``UploadRequest/make(_:_:bodyLength:)`` builds it, and the event that says it
        /// went out (redacted already).
        func make(stream: String, offset: Int, bodyLength: Int) -> (request: URLRequest, started: UploadEvent) {
            var request = request
            var added: [UploadConfiguration.Header] = []
            if identity {
                added = [.init(name: "Streamup-Stream-Id", value: stream), .init(name: "Streamup-Offset", value: String(offset))]
            }
            // libcurl sends exactly this many bytes, and no chunked encoding (DesignNotes, platform fact 5).
            added.append(.init(name: "Content-Length", value: String(bodyLength)))
            for field in added { request.setValue(field.value, forHTTPHeaderField: field.name) }
            request.setValue(" ", forHTTPHeaderField: "Transfer-Encoding")
            return (request, .requestStarted(method: method, url: shownURL, headers: shownFields + added))
        }
    }
}
