import Foundation

extension UploadEvent {
    /// This event as an app's log may show it: header field values that carry credentials
    /// (`Authorization`, `Cookie`, `DD-API-KEY`, …, see `SecretRedaction`) and secrets inside
    /// URLs in texts are replaced by `<redacted>`. Both uploaders hand only redacted events to
    /// `onEvent`: what an app logs never holds its tokens.
    var redacted: UploadEvent {
        switch detail {
        case .requestStarted(let method, let url, let headers):
            return .requestStarted(
                method: method, url: Self.redacting(url),
                headers: headers.map {
                    UploadConfiguration.Header(name: $0.name, value: SecretRedaction.value(ofField: $0.name, $0.value))
                })
        case .responseReceived(let statusCode, let headers):
            return .responseReceived(
                statusCode: statusCode,
                headers: Dictionary(
                    uniqueKeysWithValues: headers.map {
                        ($0.key, SecretRedaction.value(ofField: $0.key, $0.value))
                    }))
        case .redirectRefused(let statusCode, let location):
            return .redirectRefused(statusCode: statusCode, location: location.map(SecretRedaction.redactingURLs(in:)))
        case .retrying(let reason, let attempt, let delay, let first):
            return .retrying(reason: SecretRedaction.redactingURLs(in: reason), attempt: attempt, delay: delay, first: first)
        case .notice(let text):
            return .notice(SecretRedaction.redactingURLs(in: text))
        case .gaveUp(let text):
            return .gaveUp(SecretRedaction.redactingURLs(in: text))
        case .recovered, .deadLettered, .recordsRejected, .source:
            return self
        }
    }

    /// `url` with its user information and secret query values replaced (percent-encoded, so
    /// that it stays a URL).
    private static func redacting(_ url: URL) -> URL {
        let text = url.absoluteString
        let redacted = SecretRedaction.redactingURLs(in: text)
        guard redacted != text else { return url }
        return URL(string: redacted.replacingOccurrences(of: SecretRedaction.placeholder, with: "%3Credacted%3E")) ?? url
    }
}
