/// A `multipart/form-data` request (RFC 7578) whose file part is the request's records, for
/// upload endpoints that take only forms: text fields first, then one file part holding the
/// records unchanged, with the part's own `Content-Type`.
///
/// The boundary never occurs in the body:
/// - by default it is `streamup-` and 32 characters drawn from the system's random generator
///   over 62 letters and digits (190 bits): records cannot hold it by chance, and a writer of
///   log lines cannot know it in advance;
/// - text fields, names and file name are checked when the form is made (a random boundary is
///   drawn again until none of them holds it; a given one that occurs is an error);
/// - the records are checked as they stream (``Envelope/recordsMustNotContain``): a request
///   whose records hold the boundary fails before the bytes that hold it are sent, so the
///   receiver never sees a closed form with a broken part (its chunked body ends without its
///   last chunk), and the uploader treats the failure as final: the segment is set aside with
///   `--dead-letter`, or the upload stops with one line. A new run draws a new boundary.
///
/// Field names and the file name are written as the HTML standard's form encoding does: `"`,
/// CR and LF percent-encoded (https://html.spec.whatwg.org/multipage/form-control-infrastructure.html#multipart-form-data).
///
/// Thread safety: a value type.
package struct MultipartForm: Sendable, Equatable {
    /// A text field, sent before the file part.
    package struct TextField: Sendable, Equatable {
        package var name: String
        package var value: String
        package init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    package let boundary: String
    package let textFields: [TextField]
    /// The file part's field name and file name.
    package let fileField: String
    package let filename: String
    /// The file part's `Content-Type` (the records' type).
    package let fileContentType: String

    /// A form with the given boundary, or a random one (see the type's notes) when nil.
    /// - Throws: ``StreamUpError`` (`.invalidConfiguration`) for a given boundary that is not
    ///   1-70 letters, digits and `'()+_,-./:=?` (RFC 2046 §5.1.1, no space) or that occurs in
    ///   the fields, names or content type.
    package init(
        fileField: String, filename: String, fileContentType: String = "application/octet-stream",
        textFields: [TextField] = [], boundary: String? = nil
    ) throws {
        self.fileField = fileField
        self.filename = filename
        self.fileContentType = fileContentType
        self.textFields = textFields
        let texts = [fileField, filename, fileContentType] + textFields.flatMap { [$0.name, $0.value] }
        if let boundary {
            guard (1...70).contains(boundary.utf8.count), boundary.utf8.allSatisfy(Self.isBoundaryByte) else {
                throw StreamUpError(.invalidConfiguration, "the multipart boundary '\(boundary)' is not 1-70 letters, digits and '()+_,-./:=?'")
            }
            guard !texts.contains(where: { $0.contains(boundary) }) else {
                throw StreamUpError(.invalidConfiguration, "the multipart boundary '\(boundary)' occurs in a field of the form; choose another")
            }
            self.boundary = boundary
        } else {
            var drawn = Self.randomBoundary()
            while texts.contains(where: { $0.contains(drawn) }) { drawn = Self.randomBoundary() }
            self.boundary = drawn
        }
    }

    /// `streamup-` and 32 random letters and digits (190 bits from `SystemRandomNumberGenerator`).
    package static func randomBoundary() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".unicodeScalars)
        var generator = SystemRandomNumberGenerator()
        var text = "streamup-"
        for _ in 0..<32 { text.unicodeScalars.append(alphabet[Int.random(in: 0..<alphabet.count, using: &generator)]) }
        return text
    }

    /// The request's `Content-Type`.
    package var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// The envelope that makes each request's body this form, with the records (wrapped in
    /// `inner` first, if given: a JSON array inside the file part) as the file's contents.
    package func envelope(around inner: Envelope? = nil) -> Envelope {
        var head = ""
        for field in textFields {
            head += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Self.quoted(field.name))\"\r\n\r\n\(field.value)\r\n"
        }
        head += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Self.quoted(fileField))\"; filename=\"\(Self.quoted(filename))\"\r\n"
        head += "Content-Type: \(fileContentType)\r\n\r\n"
        let tail = Array("\r\n--\(boundary)--\r\n".utf8)
        var envelope = Envelope(
            head: Array(head.utf8) + (inner?.head ?? []), recordPrefix: inner?.recordPrefix ?? [],
            recordSuffix: inner?.recordSuffix ?? [], separator: inner?.separator ?? [], tail: (inner?.tail ?? []) + tail,
            keepsNewline: inner?.keepsNewline ?? true,
            recordsMustNotContain: Array(boundary.utf8))
        envelope.lokiStreams = inner?.lokiStreams
        return envelope
    }

    /// `"`, CR and LF percent-encoded, as in the HTML form-data encoding.
    static func quoted(_ value: String) -> String {
        var text = ""
        for character in value.unicodeScalars {
            switch character {
            case "\"": text += "%22"
            case "\r": text += "%0D"
            case "\n": text += "%0A"
            default: text.unicodeScalars.append(character)
            }
        }
        return text
    }

    private static func isBoundaryByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || "'()+_,-./:=?".utf8.contains(byte)
    }
}
