import Foundation
import StreamUpHTTP

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How every request of an upload is made: the session's settings, the request, and every
/// header field it carries (streamup's, the caller's, the stream's place, the resumable
/// protocol's, the body's length), built here and nowhere else. Which fields a caller may set:
/// UploadConfiguration+Headers.swift.
///
/// Thread safety: stateless.
enum UploadRequest {
    /// A session of the upload's own, with a serial delegate queue, no cache or cookies, no
    /// overall time limit, and at least `connectionsPerHost` connections to one host.
    ///
    /// On Linux a session opens at most `httpMaximumConnectionsPerHost` connections to a host
    /// (6 by default, libcurl's `CURLMOPT_MAX_HOST_CONNECTIONS`) and queues further requests
    /// until one is free; without pipelining a connection carries one request at a time, so a
    /// window of more requests than that would have only 6 out at once.
    static func makeSession(_ configuration: UploadConfiguration, connectionsPerHost: Int = 1, delegate: URLSessionDelegate) -> URLSession {
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.httpMaximumConnectionsPerHost = max(sessionConfiguration.httpMaximumConnectionsPerHost, connectionsPerHost)
        sessionConfiguration.timeoutIntervalForRequest = configuration.responseTimeout.seconds
        // A stream may run for days: no overall limit.
        sessionConfiguration.timeoutIntervalForResource = 365 * 24 * 3600
        sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        sessionConfiguration.urlCache = nil
        sessionConfiguration.httpCookieStorage = nil
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "streamup.upload.delegate"
        return URLSession(configuration: sessionConfiguration, delegate: delegate, delegateQueue: queue)
    }

    /// What a request is for: the header fields streamup adds to the configuration's follow
    /// from it. Stream offsets are the receiver's (dead letters left out); resumable offsets
    /// count from the upload's first byte.
    ///
    /// Thread safety: a value type.
    enum Purpose: Equatable {
        /// A segment as a request of its own, naming its place in the stream with
        /// `Streamup-Stream-Id` and `Streamup-Offset` when its body is the stream's bytes as
        /// they are (an envelope or gzip makes offsets meaningless).
        case segment(stream: String, offset: Int)
        /// The one live request: its body goes out chunked.
        case live
        /// The resumable protocol's creation: the configured method (POST for a PATCH), an
        /// empty body, `Upload-Complete: ?0`, and the stream's name and offset.
        case create(stream: String, offset: Int)
        /// A HEAD asking the upload at `upload` how much it holds.
        case checkOffset(upload: String)
        /// A PATCH appending a segment to the upload at `upload` from `offset`.
        case append(upload: String, offset: Int)
        /// The empty PATCH that completes the upload at `upload`, which holds `offset` bytes.
        case complete(upload: String, offset: Int)
    }

    /// The request for `purpose`, and its header fields as sent (for `-v`): streamup's own
    /// (``headerFields(_:)``), the caller's, then the protocol's. `bodyLength`: the length of
    /// the complete body it carries (nil: none, or the live request's stream).
    static func make(
        _ purpose: Purpose, _ configuration: UploadConfiguration, bodyLength: Int? = nil
    ) -> (request: URLRequest, fields: [UploadConfiguration.Header]) {
        var configuration = configuration
        switch purpose {
        case .segment(let stream, let offset):
            if configuration.body.isIdentity {
                // Offsets count body bytes only when the body is the stream as it is.
                configuration.headers += [
                    .init(name: "Streamup-Stream-Id", value: stream), .init(name: "Streamup-Offset", value: String(offset)),
                ]
            }
        case .live:
            var (request, fields) = (makeRequest(configuration), headerFields(configuration))
            // libcurl frames a body of unknown length chunked by itself: named here for `-v`.
            fields.append(.init(name: "Transfer-Encoding", value: "chunked"))
            return (request, fields)
        case .create(let stream, let offset):
            if configuration.method == "PATCH" { configuration.method = "POST" }
            configuration.headers += resumableFields([
                (ResumableUploadFields.complete, "?0"), ("Streamup-Stream-Id", stream), ("Streamup-Offset", String(offset)),
            ])
        case .checkOffset(let upload):
            configuration = at(upload, configuration, [])
            configuration.method = "HEAD"
        case .append(let upload, let offset):
            configuration = at(upload, configuration, [(ResumableUploadFields.offset, String(offset)), (ResumableUploadFields.complete, "?0")])
        case .complete(let upload, let offset):
            configuration = at(upload, configuration, [(ResumableUploadFields.offset, String(offset)), (ResumableUploadFields.complete, "?1")])
        }
        var request = makeRequest(configuration)
        var fields = headerFields(configuration)
        switch purpose {
        case .segment, .append, .live:
            if let bodyLength {
                // libcurl sends exactly this many bytes, and no chunked encoding (DesignNotes, platform fact 5).
                let length = UploadConfiguration.Header(name: "Content-Length", value: String(bodyLength))
                request.setValue(length.value, forHTTPHeaderField: length.name)
                request.setValue(" ", forHTTPHeaderField: "Transfer-Encoding")
                fields.append(length)
            }
        case .create, .checkOffset, .complete:
            // A protocol request carries no records: POST and PATCH an empty body
            // (`Content-Length: 0`), any other method no body and so no content type.
            if configuration.method == "POST" || configuration.method == "PATCH" {
                request.httpBody = Data()
                fields.append(.init(name: "Content-Length", value: "0"))
            } else {
                request.setValue(nil, forHTTPHeaderField: "Content-Type")
                fields.removeAll { $0.name.caseInsensitiveCompare("Content-Type") == .orderedSame }
            }
        }
        return (request, fields)
    }

    /// The request for `configuration`, with its header fields (``headerFields(_:)``).
    static func makeRequest(_ configuration: UploadConfiguration) -> URLRequest {
        var request = URLRequest(url: SessionURL.forURLSession(configuration.url) ?? configuration.url)
        request.httpMethod = configuration.method
        request.timeoutInterval = configuration.responseTimeout.seconds
        for header in headerFields(configuration) {
            request.setValue(header.value, forHTTPHeaderField: header.name)
        }
        // A blank Expect keeps libcurl from adding `Expect: 100-continue` and waiting a second
        // for a `100 Continue` before the first byte (DesignNotes, platform fact 5), and libcurl
        // sends no field for a blank value. An empty value would go out as `Expect:`, which
        // gunicorn answers `417 Expectation Failed`. Not in ``headerFields(_:)``: not sent.
        request.setValue(" ", forHTTPHeaderField: "Expect")
        return request
    }

    /// The fields streamup sets, then the caller's (which may replace them).
    static func headerFields(_ configuration: UploadConfiguration) -> [UploadConfiguration.Header] {
        var fields = [
            UploadConfiguration.Header(name: "Content-Type", value: configuration.contentType),
            UploadConfiguration.Header(name: "User-Agent", value: "streamup/\(StreamUpVersion.current)"),
        ]
        if configuration.body.gzip { fields.append(UploadConfiguration.Header(name: "Content-Encoding", value: "gzip")) }
        for header in configuration.headers {
            fields.removeAll { $0.name.caseInsensitiveCompare(header.name) == .orderedSame }
        }
        return fields + configuration.headers
    }

    /// A request to the resumable upload at `upload`: a PATCH of the protocol's content type,
    /// with the caller's header fields (the credentials only to the origin the caller named)
    /// and the protocol's `fields`.
    private static func at(_ upload: String, _ configuration: UploadConfiguration, _ fields: [(String, String)]) -> UploadConfiguration {
        var request = configuration
        let location = URL(string: upload) ?? configuration.url
        request.url = location
        if !sameOrigin(location, configuration.url) {
            // Credentials go only to the origin the user named, as curl does without
            // --location-trusted: a creation answer may name any host as the upload's place.
            request.headers.removeAll { SecretRedaction.isSecret(fieldName: $0.name) }
        }
        request.method = "PATCH"
        request.contentType = ResumableUploadFields.partialUploadType
        request.headers.removeAll { $0.name.caseInsensitiveCompare("Content-Type") == .orderedSame }
        request.headers += resumableFields(fields)
        return request
    }

    /// The protocol's version field, then `fields`.
    private static func resumableFields(_ fields: [(String, String)]) -> [UploadConfiguration.Header] {
        [UploadConfiguration.Header(name: ResumableUploadFields.version, value: String(ResumableUploadFields.interopVersion))]
            + fields.map { UploadConfiguration.Header(name: $0.0, value: $0.1) }
    }

    /// Whether two URLs share scheme, host and port (the port a scheme implies included).
    static func sameOrigin(_ one: URL, _ other: URL) -> Bool {
        func origin(_ url: URL) -> (String, String, Int?) {
            let scheme = url.scheme?.lowercased() ?? ""
            let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : nil)
            return (scheme, url.host?.lowercased() ?? "", port)
        }
        return origin(one) == origin(other)
    }
}
