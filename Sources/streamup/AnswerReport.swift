import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import StreamUp

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
            return "\(head): Location \(oneLine(Array(target.utf8), isHTML: false, totalBytes: target.utf8.count, limit: 2048)); a streamed body cannot follow redirects, use that URL"
        }
        let contentType = field("Content-Type")?.lowercased() ?? ""
        let isHTML = contentType.hasPrefix("text/html") || contentType.hasPrefix("application/xhtml")
        let declared = field("Content-Length").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        let text = oneLine(body, isHTML: isHTML, totalBytes: max(declared, body.count), limit: bodyCharacterLimit)
        return text.isEmpty ? head : "\(head): \(text)"
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
        var pendingSpace: Int?
        while let (character, end) = reader.next() {
            if character.isWhitespace || character.unicodeScalars.allSatisfy({ $0.properties.generalCategory == .control }) {
                if !shown.isEmpty { pendingSpace = end }
                continue
            }
            if let space = pendingSpace {
                shown.append((" ", space))
                pendingSpace = nil
            }
            shown.append((character, end))
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
    /// success, or ``ExitStatus/outputFailed`` when it could not be written.
    static func printSuccess(_ response: UploadResponse, to file: String?) -> Int32 {
        let body = [UInt8](response.body)
        if body.count >= UploadConfiguration(url: URL(fileURLWithPath: "/")).maxResponseBodyBytes {
            Terminal.error("only the first \(body.count) bytes of the answer are kept; the rest was dropped")
        }
        let what = "the server's answer (\(response.statusCode) \(HTTPURLResponse.localizedString(forStatusCode: response.statusCode)), the upload itself succeeded)"
        if let file { return ResultOutput.write(body, what: what, to: file) }
        guard let printable = printable(body) else { return ExitStatus.success }
        return ResultOutput.write(printable, what: what)
    }
}

/// Reads a body's text one character at a time, with the byte offset just past it; for HTML,
/// skips markup and decodes entities.
///
/// Thread safety: a value type, used by one caller.
private struct BodyText {
    private let characters: [(character: Character, end: Int)]
    private let isHTML: Bool
    private var index = 0

    init(_ body: [UInt8], isHTML: Bool) {
        var characters: [(Character, Int)] = []
        var offset = 0
        for character in String(decoding: body, as: UTF8.self) {
            // U+FFFD stands for one invalid byte; every other character for its UTF-8 length.
            offset += character == "\u{FFFD}" ? 1 : character.utf8.count
            characters.append((character, min(offset, body.count)))
        }
        self.characters = characters
        self.isHTML = isHTML
    }

    mutating func next() -> (Character, Int)? {
        while index < characters.count {
            let (character, end) = characters[index]
            guard isHTML else {
                index += 1
                return (character, end)
            }
            if character == "<" {
                skipMarkup()
                // Markup separates words ("<td>a</td><td>b</td>" reads "a b").
                return (" ", characters[index - 1].end)
            }
            if character == "&", let (decoded, length) = entity(at: index) {
                index += length
                return (decoded, characters[index - 1].end)
            }
            index += 1
            return (character, end)
        }
        return nil
    }

    /// Skips the tag at `index`; a comment, or a head, script or style element, whole.
    private mutating func skipMarkup() {
        if starts(with: "<!--") {
            skip(past: "-->")
            return
        }
        for element in ["head", "script", "style"] where starts(with: "<" + element) {
            let after = index + element.count + 1
            if after >= characters.count || [">", " ", "\t", "\n", "\r", "/"].contains(characters[after].character) {
                skip(past: "</\(element)")
                skip(past: ">")
                return
            }
        }
        skip(past: ">")
    }

    private func starts(with text: String) -> Bool {
        let wanted = Array(text)
        guard index + wanted.count <= characters.count else { return false }
        return (0..<wanted.count).allSatisfy { String(characters[index + $0].character).lowercased() == String(wanted[$0]) }
    }

    /// Moves past the next occurrence of `text` (case-insensitive), or to the end.
    private mutating func skip(past text: String) {
        let length = text.count
        while index < characters.count {
            if starts(with: text) {
                index += length
                return
            }
            index += 1
        }
    }

    /// `&amp;`, `&lt;`, `&#39;`, `&#x27;`… at `start`: the character and the entity's length.
    private func entity(at start: Int) -> (Character, Int)? {
        guard let semicolon = (start + 1..<min(start + 12, characters.count)).first(where: { characters[$0].character == ";" }) else {
            return nil
        }
        let name = String(characters[(start + 1)..<semicolon].map(\.character))
        let named: [String: Character] = ["amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "nbsp": " "]
        let decoded: Character?
        if let character = named[name] {
            decoded = character
        } else if name.hasPrefix("#x") || name.hasPrefix("#X") {
            decoded = UInt32(name.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init).map(Character.init)
        } else if name.hasPrefix("#") {
            decoded = UInt32(name.dropFirst()).flatMap(Unicode.Scalar.init).map(Character.init)
        } else {
            decoded = nil
        }
        return decoded.map { ($0, semicolon - start + 1) }
    }
}
