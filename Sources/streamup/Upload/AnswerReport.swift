import Foundation
import StreamUp

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How the CLI shows the server's answer: one line on stderr for an answer that is not 2xx,
/// and the body of a 2xx answer as the command's result, as curl prints it.
///
/// The formatting is pure (``failureLine(status:headers:body:requestURL:)``,
/// ``oneLine(_:isHTML:totalBytes:limit:)``, ``printable(_:)``); ``printSuccess(_:to:)`` only
/// writes what they return.
///
/// Thread safety: stateless; callable from any thread.
enum AnswerReport {
    /// The most characters of an error answer's body shown on its line.
    static let bodyCharacterLimit = 300

    /// `server answered 502 Bad Gateway: <body on one line> … (1234 more bytes)`. A redirect
    /// names its target instead, which a live body cannot follow: `server answered 301 Moved
    /// Permanently: Location https://…; a streamed body cannot follow redirects, use that URL`.
    static func failureLine(status: Int, headers: [String: String], body: [UInt8], requestURL: URL?) -> String {
        let head = "server answered \(status) \(HTTPURLResponse.localizedString(forStatusCode: status))"
        func field(_ name: String) -> String? {
            headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
        }
        if (300..<400).contains(status), let location = field("Location") {
            let target = URL(string: location, relativeTo: requestURL)?.absoluteString ?? location
            return
                "\(head): Location \(oneLine(Array(target.utf8), isHTML: false, totalBytes: target.utf8.count, limit: 2048)); a streamed body cannot follow redirects, use that URL"
        }
        let contentType = field("Content-Type")?.lowercased() ?? ""
        let isHTML = contentType.hasPrefix("text/html") || contentType.hasPrefix("application/xhtml")
        let declared = field("Content-Length").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        let text = oneLine(body, isHTML: isHTML, totalBytes: max(declared, body.count), limit: bodyCharacterLimit)
        let line = text.isEmpty ? head : "\(head): \(text)"
        let hint = bulkPathHint(status: status, body: body, requestURL: requestURL) ?? clientCertificateHint(status: status, body: body)
        return hint.map { "\(line); \($0)" } ?? line
    }

    /// What to do when nginx (`ssl_verify_client on`) refuses a request for its client
    /// certificate: it finishes the TLS handshake and answers 400 with a page saying which.
    static func clientCertificateHint(status: Int, body: [UInt8]) -> String? {
        guard status == 400 else { return nil }
        let text = Data(body)
        if text.range(of: Data("No required SSL certificate was sent".utf8)) != nil {
            return "the server wants a client certificate: give it with --cert FILE and its key with --key FILE (PEM)"
        }
        if text.range(of: Data("The SSL certificate error".utf8)) != nil {
            return "the server refused the client certificate (--cert): check that a CA it trusts issued it and that it is in date and not revoked"
        }
        return nil
    }

    /// What a person can do about a final answer with `status`, when the status says it: a
    /// refusal of the credentials, the place or the size.
    static func advice(status: Int) -> String? {
        switch status {
        case 401: "check the credentials (-u, --bearer-token-file, --token-file, -H)"
        case 403: "the credentials may not write there: check them and what the receiver allows them"
        case 404: "check the URL's path (--to RECEIVER sets a receiver's usual one)"
        case 407: "check the proxy's credentials (in http_proxy/https_proxy)"
        case 413: "one record is larger than the server takes: raise its limit, or lower --max-record"
        default: nil
        }
    }

    /// What to do when Fluent Bit's elasticsearch input refuses a bulk path other than `/_bulk`
    /// (it serves only `POST /_bulk`, and answers `400 error: invalid HTTP endpoint` to
    /// `/INDEX/_bulk`, the path `--to elasticsearch` adds): the URL to use instead.
    static func bulkPathHint(status: Int, body: [UInt8], requestURL: URL?) -> String? {
        guard status == 400, body.starts(with: Array("error: invalid HTTP endpoint".utf8)),
            let requestURL, var components = URLComponents(url: requestURL, resolvingAgainstBaseURL: false),
            components.percentEncodedPath.hasSuffix("/_bulk"), components.percentEncodedPath != "/_bulk"
        else { return nil }
        components.percentEncodedPath = "/_bulk"
        components.query = nil
        let url = components.url?.absoluteString ?? "/_bulk"
        return "Fluent Bit's elasticsearch input takes only POST /_bulk (no index in the path): use \(url)"
    }

    /// ``failureLine(status:headers:body:requestURL:)`` for `response`.
    static func failureLine(_ response: UploadResponse, requestURL: URL?) -> String {
        failureLine(status: response.statusCode, headers: response.headers, body: [UInt8](response.body), requestURL: requestURL)
    }

    /// `body` as one line: every run of whitespace or control characters (line breaks, tabs,
    /// escape sequences) becomes one space; for HTML, the head, scripts, styles, comments and
    /// tags are left out and the common entities decoded. Past `limit` characters it is cut, at
    /// a space when there is one near, and ends with `… (N more bytes)`, N counted in the
    /// body's bytes from the cut to `totalBytes` (the declared length, when more than arrived).
    static func oneLine(_ body: [UInt8], isHTML: Bool, totalBytes: Int, limit: Int) -> String {
        var reader = BodyText(body, isHTML: isHTML)
        var shown: [(character: Character, end: Int)] = []
        while let next = reader.nextOnOneLine() {
            shown.append(next)
            if shown.count > limit { break }
        }
        guard shown.count > limit else { return String(shown.map(\.character)) }
        // Cut within the limit, at the last space in its final fifth if there is one.
        var cut = limit
        if let space = shown[(limit * 4 / 5)..<limit].lastIndex(where: { $0.character == " " }) { cut = space }
        let kept = shown[..<cut]
        let consumed = kept.last?.end ?? 0
        return String(kept.map(\.character)) + " … (\(max(totalBytes - consumed, 1)) more bytes)"
    }

    /// What a 2xx answer prints: its body, ending with a line break; nil when it is empty.
    static func printable(_ body: [UInt8]) -> [UInt8]? {
        guard !body.isEmpty else { return nil }
        return body.last == UInt8(ascii: "\n") ? body : body + [UInt8(ascii: "\n")]
    }

    /// Prints a 2xx answer's body on stdout, or writes it exactly to `file` (`-o`); says on
    /// stderr when the body was longer than what is kept. Returns the command's status:
    /// success, or ``ExitStatus/ioFailure`` when it could not be written.
    static func printSuccess(_ response: UploadResponse, to file: String?) -> Int32 {
        let body = [UInt8](response.body)
        if response.isBodyCut {
            Terminal.error("only the first \(body.count) bytes of the answer are kept; the rest was dropped")
        }
        let what =
            "the server's answer (\(response.statusCode) \(HTTPURLResponse.localizedString(forStatusCode: response.statusCode)), the upload itself succeeded)"
        if let file { return ResultOutput.write(body, what: what, to: file) }
        guard let printable = printable(body) else { return ExitStatus.success }
        return ResultOutput.write(printable, what: what)
    }
}
