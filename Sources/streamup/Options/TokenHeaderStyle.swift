import Foundation
import StreamUp

/// Which request header field carries a token, and the scheme word before it: the
/// "auth header style" of a receiver. `Authorization: Bearer <token>` is the default (RFC 6750);
/// Splunk HEC wants `Authorization: Splunk <token>`, Datadog `DD-API-KEY: <token>`.
///
/// Thread safety: a value type.
struct TokenHeaderStyle: Sendable, Equatable, CustomStringConvertible {
    /// The header field name: `Authorization`, `DD-API-KEY`.
    var name: String
    /// The word before the token and a space (`Bearer`, `Splunk`); nil: the token alone.
    var scheme: String?

    init(name: String, scheme: String? = nil) {
        self.name = name
        self.scheme = scheme
    }

    /// `Authorization: Bearer <token>` (RFC 6750 §2.1).
    static let bearer = TokenHeaderStyle(name: "Authorization", scheme: "Bearer")
    /// Splunk HTTP Event Collector: `Authorization: Splunk <token>`.
    /// https://docs.splunk.com/Documentation/Splunk/latest/Data/FormateventsforHTTPEventCollector
    static let splunk = TokenHeaderStyle(name: "Authorization", scheme: "Splunk")
    /// Datadog's logs intake: `DD-API-KEY: <key>`.
    /// https://docs.datadoghq.com/api/latest/logs/#send-logs
    static let datadog = TokenHeaderStyle(name: "DD-API-KEY")

    /// The field carrying `token`.
    func header(token: String) -> UploadConfiguration.Header {
        UploadConfiguration.Header(name: name, value: scheme.map { "\($0) \(token)" } ?? token)
    }

    /// `Authorization: Bearer`, `DD-API-KEY`: how the style is written on the command line.
    var description: String { name + (scheme.map { ": \($0)" } ?? "") }

    /// Parses `NAME[: SCHEME]` (`Authorization: Splunk`, `DD-API-KEY`); nil when the name is not
    /// a field name or the scheme is not one word.
    init?(parsing text: String) {
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map { String($0).trimmingWhitespace }
        guard let name = parts.first, UploadConfiguration.Header.isToken(name) else { return nil }
        let scheme = parts.count == 2 && !parts[1].isEmpty ? parts[1] : nil
        if let scheme, !UploadConfiguration.Header.isToken(scheme) { return nil }
        self.init(name: name, scheme: scheme)
    }
}

extension Receiver {
    /// The header a token goes in, and the word before it: Splunk's `Authorization: Splunk
    /// <token>`, Datadog's `DD-API-KEY: <key>`, Elasticsearch's `Authorization: ApiKey <key>`;
    /// the others take `Authorization: Bearer <token>`.
    var tokenHeader: TokenHeaderStyle {
        switch self {
        case .splunkHEC: .splunk
        case .datadog: .datadog
        case .elasticsearch: TokenHeaderStyle(name: "Authorization", scheme: "ApiKey")
        case .victorialogs, .loki, .clickhouse, .otlp, .otlpJSON, .vector, .fluentBit: .bearer
        }
    }
}
