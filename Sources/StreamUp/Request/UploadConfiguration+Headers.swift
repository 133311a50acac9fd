/// Which request header fields a caller may set, and what their values may hold.
///
/// streamup (through URLSession and libcurl) frames the body and manages the connection
/// itself, so the fields that do either are refused rather than sent beside its own:
/// - `Content-Length` and `Transfer-Encoding`: streamup frames every body itself, a segment's
///   complete body with its `Content-Length`, one live request's (`--single-request`) chunked.
///   A caller's `Content-Length` on a chunked body went out beside `Transfer-Encoding: chunked`
///   (a malformed request, RFC 9112 §6.3); `Transfer-Encoding: identity` replaced the chunking,
///   so the server could not tell where the body ends.
/// - `Connection`, `Keep-Alive`, `Proxy-Connection`, `TE`, `Trailer`, `Upgrade`: hop-by-hop
///   fields (RFC 9110 §7.6.1) that belong to the client's connection handling; a `Connection`
///   listing other names also makes proxies drop those fields (`Streamup-Offset`, say).
/// - `Expect`: streamup sends a blank one so the first byte leaves at once; `100-continue`
///   would hold every request for a second and change how a refusal arrives.
///
/// `Host` stays allowed: reaching a virtual host through an IP address or a tunnel is a
/// common, well-formed use (curl's `-H 'Host: …'`), and libcurl sends it in place of its own.
///
/// Values may not hold control characters: CR or LF would end the field early (URLSession
/// silently dropped such a field), NUL and the others are not allowed in a field value
/// (RFC 9110 §5.5). Horizontal tab and bytes of UTF-8 text are fine.
extension UploadConfiguration.Header {
    /// The fields streamup sets itself, lowercased, with the reason.
    static let managedFields: [String: String] = [
        "content-length": "streamup sets it (a segment's complete body) or sends the body chunked (--single-request)",
        "transfer-encoding": "streamup frames the body itself (Content-Length, or chunked with --single-request)",
        "connection": "the connection is managed by streamup's HTTP client",
        "keep-alive": "the connection is managed by streamup's HTTP client",
        "proxy-connection": "the connection is managed by streamup's HTTP client",
        "te": "the connection is managed by streamup's HTTP client",
        "trailer": "streamup sends no trailer fields",
        "upgrade": "a streamed upload cannot switch protocols",
        "expect": "streamup sends the body at once, without waiting for 100 Continue",
    ]

    /// Why this field cannot be sent, naming it; nil when it can.
    package var problem: String? {
        guard Self.isToken(name) else {
            return "'\(Self.escaped(name))' is not a valid header name"
        }
        if let reason = Self.managedFields[name.lowercased()] {
            return "header \(name) cannot be set: \(reason)"
        }
        if let control = value.unicodeScalars.first(where: { $0 != "\t" && ($0.value < 0x20 || $0.value == 0x7F) }) {
            return "the value of \(name) contains \(Self.controlName(control)); header values cannot hold line breaks, NUL or other control characters"
        }
        return nil
    }

    /// A field name is a token (RFC 9110 §5.1).
    package static func isToken(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                byte > 32 && byte < 127 && !"()<>@,;:\\\"/[]?={}".utf8.contains(byte)
            }
    }

    /// `text` with control characters written as `\r`, `\n`, `\0` or `\u{1B}`, for one-line messages.
    package static func escaped(_ text: String) -> String {
        String(
            text.unicodeScalars.map { scalar -> String in
                switch scalar {
                case "\r": return "\\r"
                case "\n": return "\\n"
                case "\0": return "\\0"
                case _ where scalar.value < 0x20 && scalar != "\t" || scalar.value == 0x7F:
                    return "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
                default: return String(scalar)
                }
            }.joined())
    }

    private static func controlName(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "\r": return "a carriage return (CR)"
        case "\n": return "a line feed (LF)"
        case "\0": return "a NUL byte"
        default:
            let hex = String(scalar.value, radix: 16, uppercase: true)
            return "the control character U+\(String(repeating: "0", count: 4 - hex.count))\(hex)"
        }
    }
}
