import StreamUpHTTP

/// Builds the few responses the sink sends, as bytes ready for one `send`.
///
/// Every final response carries a `Content-Type` (`application/json`, or a responder's own), an exact `Content-Length`, and
/// `Connection: close` when the connection ends after it.
///
/// Thread safety: stateless; callable from any thread.
enum HTTPResponse {
    /// `HTTP/1.1 100 Continue`, sent before reading a body the client is holding back.
    static let continueInterim: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// An interim (`1xx`) response with `headers`.
    static func interim(status: Int, headers: [SinkHeaderField]) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n"
        for field in headers {
            head += "\(field.name): \(field.value)\r\n"
        }
        return Array((head + "\r\n").utf8)
    }

    /// A final response without content: `Content-Length: 0`, or no length at all for `204`
    /// (RFC 9110 §8.6). Also the form of every answer to a `HEAD` the sink builds this way.
    static func empty(status: Int, close: Bool, extraHeaders: [SinkHeaderField] = []) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n"
        for field in extraHeaders {
            head += "\(field.name): \(field.value)\r\n"
        }
        if status != 204 {
            head += "Content-Length: 0\r\n"
        }
        head += close ? "Connection: close\r\n" : "Connection: keep-alive\r\n"
        return Array((head + "\r\n").utf8)
    }

    /// A complete response with a JSON body; `extraHeaders` are added as given.
    static func json(status: Int, body: String, close: Bool, extraHeaders: [SinkHeaderField] = []) -> [UInt8] {
        content(status: status, type: "application/json", body: body, close: close, extraHeaders: extraHeaders)
    }

    /// A complete response with a body of content type `type`; `extraHeaders` are added as given.
    static func content(status: Int, type: String, body: String, close: Bool, extraHeaders: [SinkHeaderField] = []) -> [UInt8] {
        let payload = Array(body.utf8)
        var head = "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n"
        for field in extraHeaders {
            head += "\(field.name): \(field.value)\r\n"
        }
        head += "Content-Type: \(type)\r\n"
        head += "Content-Length: \(payload.count)\r\n"
        head += close ? "Connection: close\r\n" : "Connection: keep-alive\r\n"
        head += "\r\n"
        return Array(head.utf8) + payload
    }

    /// The summary of a stored request:
    /// `{"seq":1,"method":"POST","path":"/x","bytes":5,"sha256":"…","file":"…"}`; `sha256` is
    /// `null` when hashing is off and `file` is left out when nothing was stored. `file` is the
    /// name in the output directory: where the sink keeps its files is the operator's business,
    /// never told to a client. A request of a
    /// de-duplicated stream also gets `"stream_offset"`: the stream file's length after it.
    static func summary(of event: SinkRequestEvent, streamOffset: Int? = nil) -> String {
        var fields = [
            "\"seq\":\(event.sequence)",
            "\"method\":\(JSONString.quoted(event.method))",
            "\"path\":\(JSONString.quoted(event.path))",
            "\"bytes\":\(event.bodyByteCount)",
            "\"sha256\":\(event.sha256.map(JSONString.quoted) ?? "null")",
        ]
        if let file = event.storedFile {
            fields.append("\"file\":\(JSONString.quoted(String(file.split(separator: "/").last ?? Substring(file))))")
        }
        if let streamOffset {
            fields.append("\"stream_offset\":\(streamOffset)")
        }
        return "{" + fields.joined(separator: ",") + "}\n"
    }

    /// `{"status":400,"error":"…"}`.
    static func error(status: Int, reason: String) -> String {
        "{\"status\":\(status),\"error\":\(JSONString.quoted(reason))}\n"
    }

    /// `{"status":503,"error":"REASON","expected_offset":N}`: a stream body past the end that
    /// the sink cannot hold aside now, and why.
    static func error(status: Int, reason: String, expectedOffset: Int) -> String {
        "{\"status\":\(status),\"error\":\(JSONString.quoted(reason)),\"expected_offset\":\(expectedOffset)}\n"
    }

    /// `{"status":409,"error":"…","expected_offset":N}`: a resumable upload bound to a stream
    /// that would start past its end.
    static func streamGap(expectedOffset: Int) -> String {
        "{\"status\":409,\"error\":\"gap in stream\",\"expected_offset\":\(expectedOffset)}\n"
    }

    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 104: "Upload Resumption Supported"
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 400: "Bad Request"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 413: "Content Too Large"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: "Status \(status)"
        }
    }
}
