import Foundation

/// The server's answer to an upload: status, header fields and the start of its body.
///
/// Any status is a result, not an error; ``isSuccess`` says whether it was 2xx.
///
/// Thread safety: a value type; safe to pass anywhere.
public struct UploadResponse: Sendable {
    /// The HTTP status code.
    public let statusCode: Int
    /// Response header fields, names as the server sent them.
    public let headers: [String: String]
    /// The response body, cut at ``UploadConfiguration/maxResponseBodyBytes``.
    public let body: Data
    /// Body bytes sent by the producer and read by the upload.
    public let bytesSent: Int
    /// Whether the server sent more body than ``body`` keeps.
    public var isBodyCut = false

    /// Whether the status is 2xx.
    public var isSuccess: Bool { (200..<300).contains(statusCode) }

    /// The value of the header field `name`, matched without regard to case.
    public func value(forHeader name: String) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// The body as text (UTF-8, invalid bytes replaced).
    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// The body's first line for a message: at most `limit` characters, control characters
    /// and bytes that are not UTF-8 shown as escapes (`\u{1B}`, `\u{FFFD}`); nil when the
    /// body has no text before its first line break. An HTML body (a proxy's error page, whose
    /// first line is `<html>`) gives its words instead: no markup, runs of space as one; a
    /// protobuf body (an OTLP receiver's `google.rpc.Status`) its `message`.
    public func firstLine(limit: Int = 200) -> String? {
        if isHTML { return htmlWords(limit: limit) }
        if isProtobuf { return statusMessage.flatMap { Self.firstLine(of: $0, limit: limit) } }
        return Self.firstLine(of: body, limit: limit)
    }

    /// The first line of `text` for a message (see ``firstLine(limit:)``).
    private static func firstLine(of text: some Collection<UInt8>, limit: Int) -> String? {
        var line = ""
        var count = 0
        for scalar in String(decoding: text.prefix(limit * 4), as: UTF8.self).unicodeScalars {
            if scalar == "\n" || scalar == "\r" { break }
            if count == limit {
                line += "…"
                break
            }
            line +=
                scalar.properties.generalCategory == .control || scalar == "\u{FFFD}"
                ? "\\u{\(String(scalar.value, radix: 16, uppercase: true))}" : String(scalar)
            count += 1
        }
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        return trimmed.isEmpty ? nil : trimmed
    }

    /// Whether the body is protobuf: the answer says so (`application/x-protobuf`, as OTLP/HTTP
    /// answers a protobuf request), or says `application/octet-stream` (Loki's OTLP endpoint)
    /// and the body reads as a `google.rpc.Status` to its end.
    private var isProtobuf: Bool {
        let type = (value(forHeader: "Content-Type") ?? "").lowercased()
        return type.hasPrefix("application/x-protobuf") || (type.hasPrefix("application/octet-stream") && statusMessage != nil)
    }

    /// The `message` of a protobuf `google.rpc.Status` body (field 2; `google/rpc/status.proto`),
    /// which OTLP/HTTP receivers answer a failure with; nil: none, or a body that is not one.
    private var statusMessage: [UInt8]? {
        var reader = ProtobufReader([UInt8](body))
        var message: [UInt8]?
        while let (field, value) = reader.next() {
            if field == 2, case .lengthDelimited(let text) = value { message = text }
        }
        return reader.isAtEnd ? message : nil
    }

    /// Whether the answer says its body is HTML.
    private var isHTML: Bool {
        let type = (value(forHeader: "Content-Type") ?? "").lowercased()
        return type.hasPrefix("text/html") || type.hasPrefix("application/xhtml")
    }

    /// The words of an HTML body: at most `limit` characters besides the spaces between them
    /// (nil: none).
    private func htmlWords(limit: Int) -> String? {
        var reader = BodyText([UInt8](body.prefix(64 * 1024)), isHTML: true)
        var words = ""
        var count = 0
        var spaceBefore = false
        while let (character, _) = reader.nextOnOneLine() {
            if character == " " {
                spaceBefore = true
                continue
            }
            if count >= limit {
                words += "…"
                break
            }
            if spaceBefore {
                words += " "
                spaceBefore = false
            }
            words.append(character)
            count += 1
        }
        return words.isEmpty ? nil : words
    }

    /// The same answer with another status (a partial failure that asks for a retry).
    func withStatus(_ status: Int) -> UploadResponse {
        UploadResponse(statusCode: status, headers: headers, body: body, bytesSent: bytesSent, isBodyCut: isBodyCut)
    }
}
