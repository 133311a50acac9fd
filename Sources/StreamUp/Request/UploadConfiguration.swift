import Foundation

/// What a ``StreamUploader`` sends and where.
///
/// Thread safety: a value type; never shared mutably.
public struct UploadConfiguration: Sendable {
    /// One request header field.
    public struct Header: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The endpoint (`http` or `https`).
    public var url: URL
    /// The request method: `POST` by default, or `PUT`.
    public var method: String = "POST"
    /// `Content-Type` of the body.
    public var contentType: String = "application/octet-stream"
    /// Extra request header fields, sent in order.
    public var headers: [Header] = []
    /// Header fields made anew for every request (a token file that is rotated), after
    /// ``headers``; a failure to make them fails the request.
    public var headerProvider: (@Sendable () throws -> [Header])?
    /// How each request's body is wrapped and compressed.
    public var body = BodyEncoding()
    /// The most bytes of the server's answer kept in ``UploadResponse/body``; the answer ends
    /// there (the rest is not read: a body that never ends costs no memory).
    public var maxResponseBodyBytes: Int = 64 * 1024
    /// How long to wait for the server to accept the connection and, after the body has ended,
    /// for its answer; and the whole answer from its head to its body's end (a longer one is cut
    /// there, its status stands). A producer that is idle for a long time never trips it
    /// (DesignNotes, platform fact 4).
    public var responseTimeout: Duration = .seconds(60)
    /// CA certificates to verify the server with and a client certificate to present, as
    /// curl's `--cacert`, `--capath`, `--cert` and `--key` (PEM files, read again when they
    /// change); nil: the system's CA store, no client certificate.
    public var tls: TLS?

    /// Creates a configuration for `url`.
    public init(url: URL) {
        self.url = url
    }

    /// Parses `string` as an upload URL, with a clear error when it is not one: the scheme
    /// (`http` or `https`, any case) is lowercased, the port must be 1-65535, and the host must
    /// be one URLSession can send to on this system (see `SessionURL`). The URL keeps the
    /// spelling people read: `http://[::1]:8080/`.
    public static func url(from string: String) throws -> URL {
        guard var components = URLComponents(string: string),
            let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty
        else {
            throw StreamUpError(.invalidURL, "'\(string)' is not a URL (expected http://HOST[:PORT]/PATH)")
        }
        guard scheme == "http" || scheme == "https" else {
            throw StreamUpError(.invalidURL, "'\(string)' uses scheme '\(scheme)'; streamup speaks http and https")
        }
        if let port = components.port, !(1...65535).contains(port) {
            throw StreamUpError(.invalidURL, "'\(string)': port \(port) is out of range (1-65535)")
        }
        let authority = Self.authority(of: string)
        if components.port == nil, authority.hasSuffix(":") {
            // Foundation takes `HOST:` as the scheme's default port; a port left out is a typo.
            throw StreamUpError(
                .invalidURL, "'\(string)': the port after '\(authority)' is empty (write the port, or leave out the ':' for \(scheme)'s default)")
        }
        components.scheme = scheme
        guard let url = components.url else {
            throw StreamUpError(.invalidURL, "'\(string)' is not a URL (expected http://HOST[:PORT]/PATH)")
        }
        guard SessionURL.forURLSession(url) != nil else {
            throw StreamUpError(
                .invalidURL,
                "'\(string)': URLSession on this system cannot send to \(host) (Foundation and libcurl disagree on whether brackets belong to the host); use a host name that resolves to that address"
            )
        }
        return url
    }

    /// The authority of a URL as written: after `://`, up to the path, query or fragment, without
    /// user information.
    private static func authority(of string: String) -> Substring {
        guard let start = string.range(of: "://")?.upperBound else { return "" }
        let rest = string[start...]
        let authority = rest[..<(rest.firstIndex { "/?#".contains($0) } ?? rest.endIndex)]
        return authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority
    }

    /// Checks every field; throws ``StreamUpError`` naming the first bad one.
    package func validate() throws {
        _ = try Self.url(from: url.absoluteString)
        // URLSession on Linux refuses a body with GET and drops it with HEAD; these three carry one.
        guard ["POST", "PUT", "PATCH"].contains(method) else {
            throw StreamUpError(.invalidConfiguration, "method '\(method)' cannot carry a streamed body (use POST, PUT or PATCH)")
        }
        // zlib takes 0-9; a level it refuses must not turn into an uncompressed body
        // labelled `Content-Encoding: gzip` (BodyEncoding.stages).
        if body.gzip, !(0...9).contains(body.gzipLevel) {
            throw StreamUpError(.invalidConfiguration, "gzip level \(body.gzipLevel) is out of range (0: store, 1: fastest, to 9: smallest)")
        }
        // Which fields and values can be sent: UploadConfiguration+Headers.swift.
        for header in headers {
            if let problem = header.problem { throw StreamUpError(.invalidConfiguration, problem) }
        }
        // Readable PEM files, a key that is the certificate's (TLSFiles.swift).
        if let tls { try TLSFiles.check(tls) }
    }

    /// This configuration with ``headerProvider``'s fields made now and added to ``headers``.
    /// - Throws: ``StreamUpError`` (`.io`) when they cannot be made (a token file unreadable).
    func resolvingHeaders() throws -> UploadConfiguration {
        guard let headerProvider else { return self }
        var resolved = self
        do {
            resolved.headers += try headerProvider()
        } catch let error as StreamUpError {
            throw error
        } catch {
            throw StreamUpError(.io, "cannot make the request's header fields: \(error)")
        }
        resolved.headerProvider = nil
        return resolved
    }
}
