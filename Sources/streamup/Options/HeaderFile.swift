import Foundation
import StreamUp

/// Request header fields kept in a file, one `Name: value` per line (curl's `-H @FILE`), so
/// secrets stay out of the command line and `ps`. Empty lines and lines starting with `#` are
/// skipped; a CRLF line end is fine. Like ``TokenFile``, a regular file is read again for every
/// request (a rotated API key is used by the next request); a pipe is read once.
///
/// Errors name the file and line but never print a line's contents: it may hold a secret.
///
/// Thread safety: a value type; ``headerProvider()``'s closure reads the file on whichever
/// thread calls it.
struct HeaderFile: Sendable {
    let path: String
    private let file: SecretFile

    /// Reads the fields once now.
    /// - Throws: ``StreamUpError`` (`.io`) when the file cannot be read, holds no field, or a
    ///   line is not a field streamup can send.
    init(path: String) throws {
        self.path = path
        file = try SecretFile(path: path, kind: "header file")
        _ = try headers()
    }

    /// The fields the file holds now, in order.
    func headers() throws -> [UploadConfiguration.Header] {
        try Self.headers(in: try file.read(), path: path)
    }

    /// A provider for ``UploadConfiguration/headerProvider``: the fields, read afresh each call.
    func headerProvider() -> @Sendable () throws -> [UploadConfiguration.Header] {
        let copy = self
        return { try copy.headers() }
    }

    static func headers(in text: String, path: String) throws(StreamUpError) -> [UploadConfiguration.Header] {
        var headers: [UploadConfiguration.Header] = []
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
            let content = String(line).trimmingWhitespace
            if content.isEmpty || content.hasPrefix("#") { continue }
            let place = "line \(index + 1) of the header file \(path)"
            guard let colon = content.firstIndex(of: ":") else {
                throw StreamUpError(.io, "\(place) is not 'Name: value' (its contents are not shown: they may be secret)")
            }
            let header = UploadConfiguration.Header(
                name: String(content[..<colon]).trimmingWhitespace, value: String(content[content.index(after: colon)...]).trimmingWhitespace)
            if let problem = header.problem { throw StreamUpError(.io, "\(place): \(problem)") }
            headers.append(header)
        }
        guard !headers.isEmpty else {
            throw StreamUpError(.io, "the header file \(path) holds no header field: write one 'Name: value' per line")
        }
        return headers
    }
}
