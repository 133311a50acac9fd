import Foundation
import StreamUp

/// A token kept in a file and sent in a header field (``TokenHeaderStyle``) with every request.
/// A regular file is read again for every request, so a token rotated in place (written anew,
/// or replaced by a rename as Kubernetes does with mounted secrets) is used by the next request
/// without a restart; a pipe (`<(vault read …)`) is read once.
///
/// The file holds the token alone: white space around it (a final newline) is ignored, and a
/// line break inside, an empty file or a control character are errors, because a header value
/// cannot carry them and a half-written token would be refused by the server anyway.
///
/// ```swift
/// configuration.headerProvider = try TokenFile(path: "/run/secrets/ingest-token").headerProvider()
/// ```
///
/// Thread safety: a value type; ``headerProvider()``'s closure reads the file on whichever
/// thread calls it.
struct TokenFile: Sendable {
    let path: String
    let style: TokenHeaderStyle
    private let file: SecretFile

    /// Reads the token once now.
    /// - Throws: ``StreamUpError`` (`.io`) when the file cannot be read or holds no valid token.
    init(path: String, style: TokenHeaderStyle = .bearer) throws {
        self.path = path
        self.style = style
        file = try SecretFile(path: path, kind: "token file")
        _ = try header()
    }

    /// The header field with the token the file holds now.
    /// - Throws: ``StreamUpError`` (`.io`) when the file cannot be read or holds no valid token;
    ///   an uploader retries such a request like a failed connection (the file may be mid-rotation).
    func header() throws -> UploadConfiguration.Header {
        let token = try Self.token(in: try file.read(), path: path)
        return style.header(token: token)
    }

    /// A provider for ``UploadConfiguration/headerProvider``: the field, read afresh each call.
    func headerProvider() -> @Sendable () throws -> [UploadConfiguration.Header] {
        let copy = self
        return { [try copy.header()] }
    }

    /// The token in a file's `text`: the text without surrounding white space, which must be
    /// one line of visible characters.
    static func token(in text: String, path: String) throws(StreamUpError) -> String {
        let token = text.trimmingWhitespace
        guard !token.isEmpty else {
            throw StreamUpError(.io, "the token file \(path) is empty: write the token into it")
        }
        if token.unicodeScalars.contains(where: { $0 == "\n" || $0 == "\r" }) {
            throw StreamUpError(.io, "the token file \(path) holds more than one line: it must hold only the token, on one line")
        }
        if token.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }) {
            throw StreamUpError(.io, "the token in \(path) contains a control character: it must hold only the token")
        }
        return token
    }
}

extension String {
    /// The text without spaces, tabs, CR and LF at either end.
    var trimmingWhitespace: String {
        let isSpace: (Unicode.Scalar) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !isSpace($0) }), let last = scalars.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(scalars[first...last])
    }
}
