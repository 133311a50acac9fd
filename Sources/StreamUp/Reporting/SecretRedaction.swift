import Foundation

/// Hides secrets in what a person reads: header field values that carry credentials, and the
/// user information (`user:password@`) and credential query parameters of URLs inside any text.
/// Pure functions; the CLI runs every diagnostic line through ``redactingURLs(in:)`` and every
/// header field it prints through ``value(ofField:_:)``.
///
/// Which fields are secret: `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`,
/// `X-Splunk-…`, `X-Honeycomb-Team`, and every field whose name contains one of `auth`,
/// `token`, `secret`, `password`, `passwd`, `key`, `cookie`, `session`, `signature`,
/// `credential` (so `DD-API-KEY`, `X-API-Key`, `Api-Key`, `X-SF-Token`, `X-Auth-Token`,
/// `Ocp-Apim-Subscription-Key` …). Hiding a field that was not secret costs a line of
/// debugging; showing one that was costs the secret, so the rule errs on the side of hiding.
///
/// Thread safety: stateless; callable from any thread.
package enum SecretRedaction {
    /// What stands in for a hidden value.
    package static let placeholder = "<redacted>"

    private static let secretNames: Set<String> = [
        "authorization", "proxy-authorization", "cookie", "set-cookie", "x-honeycomb-team",
    ]
    private static let secretWords = [
        "auth", "token", "secret", "password", "passwd", "key", "cookie", "session", "signature", "credential",
    ]
    /// Query parameters that are secrets under names the words miss (Azure SAS `sig`).
    private static let secretParameters: Set<String> = ["sig"]

    /// Whether a header field (or query parameter) with this name carries a secret.
    package static func isSecret(fieldName: String) -> Bool {
        let name = fieldName.lowercased()
        return secretNames.contains(name) || name.hasPrefix("x-splunk-") || secretWords.contains { name.contains($0) }
    }

    /// The value to show for a header field: unchanged, or ``placeholder`` when the field is
    /// secret. For `Authorization` and `Proxy-Authorization` the scheme word stays:
    /// `Bearer <redacted>`, `Splunk <redacted>`, `Basic <redacted>`. An empty value stays empty.
    package static func value(ofField name: String, _ value: String) -> String {
        guard isSecret(fieldName: name), !value.isEmpty else { return value }
        let lowered = name.lowercased()
        if lowered == "authorization" || lowered == "proxy-authorization" {
            let trimmed = value.drop { $0 == " " || $0 == "\t" }
            if let space = trimmed.firstIndex(where: { $0 == " " || $0 == "\t" }) {
                let scheme = trimmed[..<space]
                if scheme.count <= 32, scheme.unicodeScalars.allSatisfy(isSchemeCharacter) {
                    return "\(scheme) \(placeholder)"
                }
            }
        }
        return placeholder
    }

    /// `text` with every `scheme://…` URL in it shown without secrets: its user information
    /// (`https://alice:pw@host/` → `https://<redacted>@host/`) and the values of query
    /// parameters with secret names (`?dd-api-key=…`, `?token=…`, `?sig=…`) are replaced by
    /// ``placeholder``. A URL ends at white space, a quote, `<` or `>`, or the end of the text.
    package static func redactingURLs(in text: String) -> String {
        guard text.contains("://") else { return text }
        let scalars = Array(text.unicodeScalars)
        var output = String.UnicodeScalarView()
        var index = 0
        var copiedUpTo = 0
        while index + 2 < scalars.count {
            guard scalars[index] == ":", scalars[index + 1] == "/", scalars[index + 2] == "/", startsScheme(scalars, before: index) else {
                index += 1
                continue
            }
            let authorityStart = index + 3
            var end = authorityStart
            while end < scalars.count, !endsURL(scalars[end]) { end += 1 }
            let redacted = redactedRest(of: Array(scalars[authorityStart..<end]))
            output.append(contentsOf: scalars[copiedUpTo..<authorityStart])
            output.append(contentsOf: redacted.unicodeScalars)
            copiedUpTo = end
            index = end
        }
        guard copiedUpTo > 0 else { return text }
        output.append(contentsOf: scalars[copiedUpTo...])
        return String(output)
    }

    /// A URL's part after `scheme://`, with its user information and secret query values hidden.
    private static func redactedRest(of rest: [Unicode.Scalar]) -> String {
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.count
        var result = ""
        if let at = rest[..<authorityEnd].lastIndex(of: "@") {
            result += placeholder
            result.unicodeScalars.append(contentsOf: rest[at..<authorityEnd])
        } else {
            result.unicodeScalars.append(contentsOf: rest[..<authorityEnd])
        }
        let tail = rest[authorityEnd...]
        guard let question = tail.firstIndex(of: "?") else {
            result.unicodeScalars.append(contentsOf: tail)
            return result
        }
        result.unicodeScalars.append(contentsOf: tail[...question])
        let queryEnd = tail[question...].firstIndex(of: "#") ?? tail.endIndex
        let query = String(String.UnicodeScalarView(tail[(question + 1)..<queryEnd]))
        result += query.split(separator: "&", omittingEmptySubsequences: false).map { parameter -> String in
            guard let equals = parameter.firstIndex(of: "=") else { return String(parameter) }
            let name = String(parameter[..<equals])
            let decoded = (name.removingPercentEncoding ?? name).lowercased()
            guard isSecret(fieldName: decoded) || secretParameters.contains(decoded), parameter.index(after: equals) != parameter.endIndex else {
                return String(parameter)
            }
            return "\(name)=\(placeholder)"
        }.joined(separator: "&")
        result.unicodeScalars.append(contentsOf: tail[queryEnd...])
        return result
    }

    /// Whether a URL scheme (a letter, then letters, digits, `+`, `-`, `.`) ends just before `colon`.
    private static func startsScheme(_ scalars: [Unicode.Scalar], before colon: Int) -> Bool {
        var start = colon
        while start > 0, isSchemeCharacter(scalars[start - 1]) { start -= 1 }
        // A scheme starts with a letter: skip digits and signs before the first one.
        while start < colon, !(("a"..."z").contains(scalars[start]) || ("A"..."Z").contains(scalars[start])) { start += 1 }
        return start < colon
    }

    private static func isSchemeCharacter(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
            || scalar == "+" || scalar == "-" || scalar == "."
    }

    private static func endsURL(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isWhitespace || scalar == "\"" || scalar == "'" || scalar == "<" || scalar == ">" || scalar.value < 0x20
    }
}
