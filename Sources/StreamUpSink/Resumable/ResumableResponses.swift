import StreamUpHTTP

/// A response decided when a request's head arrived (a refusal, an injected failure, an offset
/// retrieval, a cancellation). The request's body, if any, is read and discarded, then the
/// response is sent and the connection kept alive.
///
/// Thread safety: a value type that is never shared.
struct PreparedResponse: Equatable {
    var status: Int
    var headers: [SinkHeaderField] = []
    /// The body (JSON unless `contentType` says otherwise); `nil` for none.
    var json: String?
    /// Why the request was refused, for its event; `nil` for a success.
    var failure: String?
    var contentType = "application/json"

    /// The response bytes; an answer to `HEAD` never has content.
    func bytes(close: Bool, isHead: Bool) -> [UInt8] {
        guard let json, !isHead else {
            return HTTPResponse.empty(status: status, close: close, extraHeaders: headers)
        }
        return HTTPResponse.content(status: status, type: contentType, body: json, close: close, extraHeaders: headers)
    }
}

/// The responses of the resumable-upload protocol. Every one carries
/// `Upload-Draft-Interop-Version` (the request's version, 6 when it had none usable); refusals
/// carry the sink's usual JSON error body.
///
/// Thread safety: stateless; callable from any thread.
enum ResumableResponses {
    /// `Upload-Draft-Interop-Version: V`.
    static func versionField(_ version: Int) -> SinkHeaderField {
        SinkHeaderField(name: ResumableUploadFields.version, value: String(version))
    }

    /// `104 Upload Resumption Supported` with the upload's `Location`, sent before the body.
    static func resumptionSupported(location: String, version: Int) -> [UInt8] {
        HTTPResponse.interim(
            status: 104,
            headers: [
                versionField(version), SinkHeaderField(name: "Location", value: location),
            ])
    }

    /// `Upload-Complete` and `Upload-Offset`.
    static func progressFields(complete: Bool, offset: Int) -> [SinkHeaderField] {
        [
            SinkHeaderField(name: ResumableUploadFields.complete, value: complete ? "?1" : "?0"),
            SinkHeaderField(name: ResumableUploadFields.offset, value: String(offset)),
        ]
    }

    /// `400`: a malformed protocol request (or an unsupported version).
    static func invalid(_ reason: String, version: Int = ResumableRequest.defaultVersion) -> PreparedResponse {
        refusal(400, reason, version: version)
    }

    /// `404`: the sink does not know the upload (never created, completed, cancelled or forgotten).
    static func notFound(version: Int) -> PreparedResponse {
        refusal(404, "unknown upload", version: version)
    }

    /// `405` for a method other than `HEAD`, `PATCH`, `DELETE` on an upload URL.
    static func methodNotAllowed(version: Int) -> PreparedResponse {
        var response = refusal(405, "an upload URL takes HEAD, PATCH or DELETE", version: version)
        response.headers.append(SinkHeaderField(name: "Allow", value: "HEAD, PATCH, DELETE"))
        return response
    }

    /// `409` with the bytes held: a wrong `Upload-Offset`, or another request still appending.
    static func conflict(_ reason: String, held: Int, version: Int) -> PreparedResponse {
        var response = refusal(409, reason, version: version)
        response.headers += progressFields(complete: false, offset: held)
        response.json = "{\"status\":409,\"error\":\(JSONString.quoted(reason)),\"upload_offset\":\(held)}\n"
        return response
    }

    /// `503` with `Retry-After` for a creation while the sink holds ``SinkConfiguration/maxUploads``
    /// open uploads: completions, cancellations and expiry make room.
    static func tooManyUploads(limit: Int, version: Int) -> PreparedResponse {
        var response = refusal(
            503, "the sink holds its limit of \(limit) open uploads; complete or cancel one, or retry later",
            version: version)
        response.headers.append(SinkHeaderField(name: "Retry-After", value: "1"))
        return response
    }

    /// `409` for a creation whose stream offset is past the end of its stream.
    static func streamGap(expectedOffset: Int, version: Int) -> PreparedResponse {
        PreparedResponse(
            status: 409, headers: [versionField(version)],
            json: HTTPResponse.streamGap(expectedOffset: expectedOffset),
            failure: "gap in stream: expected offset \(expectedOffset)")
    }

    /// `204` to an offset retrieval: the bytes held, never cached.
    static func offset(_ held: Int, version: Int) -> PreparedResponse {
        PreparedResponse(
            status: 204,
            headers: [versionField(version)] + progressFields(complete: false, offset: held)
                + [SinkHeaderField(name: "Cache-Control", value: "no-store")])
    }

    /// `204` to a cancellation.
    static func cancelled(version: Int) -> PreparedResponse {
        PreparedResponse(status: 204, headers: [versionField(version)])
    }

    /// The headers of `201` (an incomplete upload) and `200` (a completed one); `location` for
    /// the answer to a creation.
    static func outcomeFields(location: String?, complete: Bool, offset: Int, version: Int) -> [SinkHeaderField] {
        [versionField(version)] + (location.map { [SinkHeaderField(name: "Location", value: $0)] } ?? [])
            + progressFields(complete: complete, offset: offset)
    }

    private static func refusal(_ status: Int, _ reason: String, version: Int) -> PreparedResponse {
        PreparedResponse(
            status: status, headers: [versionField(version)],
            json: HTTPResponse.error(status: status, reason: reason), failure: reason)
    }
}
