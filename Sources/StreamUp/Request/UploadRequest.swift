import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How every request of an upload is made: the session's settings, the request, and its
/// header fields.
///
/// Thread safety: stateless.
enum UploadRequest {
    /// A session of the upload's own, with a serial delegate queue, no cache or cookies, and
    /// no overall time limit.
    static func makeSession(_ configuration: UploadConfiguration, delegate: URLSessionDelegate) -> URLSession {
        let sessionConfiguration = URLSessionConfiguration.ephemeral
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
}
