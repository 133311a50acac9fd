/// Where a receiver takes its token: a header name and the word before the token
/// (`Authorization: Bearer <token>`, `Authorization: Splunk <token>`, `DD-API-KEY: <key>`).
/// A ``Receiver`` preset says which; whatever supplies the token (a header given by hand, a
/// token file re-read per request) makes the header with ``header(token:)``.
///
/// Thread safety: a value type.
public struct TokenHeader: Sendable, Equatable {
    public var name: String
    public var prefix: String

    public init(name: String, prefix: String) {
        self.name = name
        self.prefix = prefix
    }

    /// `Authorization: Bearer <token>` (RFC 6750), what most HTTP receivers take.
    public static let bearer = TokenHeader(name: "Authorization", prefix: "Bearer ")

    /// The header field carrying `token`.
    public func header(token: String) -> UploadConfiguration.Header {
        UploadConfiguration.Header(name: name, value: prefix + token)
    }
}
