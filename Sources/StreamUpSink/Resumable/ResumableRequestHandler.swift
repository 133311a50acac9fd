import StreamUpHTTP

/// What a resumable-upload request does to the uploads, at its head and at its end, without
/// touching the connection: ``SinkConnection`` sends what this decides.
///
/// - Creation: a new upload attached to the request; its URL is built from the request's
///   `Host` (else the listener's address). Refused with `503` when the sink holds its limit of
///   open uploads. With `Streamup-Stream-Id`/`Streamup-Offset` (and an
///   output directory) the upload is bound to that stream; a stream offset past the stream's
///   end is refused with `409`.
/// - Append: attached when the upload is known, free, and `Upload-Offset` equals the bytes
///   held; otherwise `404` or `409` with the bytes held.
/// - Offset retrieval: the bytes held, detaching a request still appending; cancellation.
///
/// Thread safety: immutable; used on connection threads (the uploads are thread-safe).
struct ResumableRequestHandler {
    /// A request attached to an upload (creating or appending to it) until its end.
    ///
    /// Thread safety: a value type owned by one connection.
    struct Attached {
        let upload: ResumableUpload
        let attachment: ResumableUpload.Attachment
        let version: Int
        /// The request ends the upload.
        let complete: Bool
        /// The upload URL, for the answers to a creation (`nil` for an append).
        let location: String?
    }

    enum Start {
        /// Answer this once the (discarded) body has been read.
        case respond(PreparedResponse)
        /// Store the body into the upload as it arrives.
        case attached(Attached)
    }

    enum End {
        /// The upload is complete (and forgotten); answer `200` with `headers`.
        case completed(ResumableUpload.Completion, headers: [SinkHeaderField])
        /// The upload goes on; answer `201` with `headers`.
        case incomplete(held: Int, headers: [SinkHeaderField])
        /// The upload was cancelled or forgotten while the request ran.
        case gone(PreparedResponse)
        /// Another request took the upload over, cancelled or forgot it, and cut this one's
        /// connection before it ended; answer nothing.
        case cut(reason: String)
    }

    let uploads: ResumableUploads
    /// Whether stream headers bind a created upload to a stream (there is an output directory).
    let bindsStreams: Bool
    /// `http://HOST:PORT` of the listener.
    let origin: String
    /// A 409 also forgets the upload, as Apple's NIOResumableUpload does (``SinkFaults/conflictForgetsUpload``).
    var conflictForgets = false

    /// Acts on the head of `request`.
    /// - Throws: a storage failure while creating the upload's file.
    func start(
        _ request: ResumableRequest, head: HTTPRequestHead, attachment: ResumableUpload.Attachment
    ) throws(SinkError) -> Start {
        let version = request.version
        switch request.kind {
        case .create(let complete):
            var stream: (id: String, offset: Int)?
            if bindsStreams {
                do {
                    stream = try SinkConnection.streamHeaders(head)
                } catch {
                    return .respond(ResumableResponses.invalid(error.reason, version: version))
                }
            }
            switch try uploads.create(stream: stream, attaching: attachment) {
            case .gap(let expected):
                return .respond(ResumableResponses.streamGap(expectedOffset: expected, version: version))
            case .full(let limit):
                return .respond(ResumableResponses.tooManyUploads(limit: limit, version: version))
            case .created(let upload):
                return .attached(
                    Attached(
                        upload: upload, attachment: attachment, version: version, complete: complete,
                        location: location(of: upload, head: head)))
            }
        case .append(let token, let offset, let complete):
            guard let upload = uploads.upload(token) else {
                return .respond(ResumableResponses.notFound(version: version))
            }
            switch try upload.attach(attachment, at: offset) {
            case .attached:
                return .attached(
                    Attached(
                        upload: upload, attachment: attachment, version: version, complete: complete, location: nil))
            case .ended:
                return .respond(ResumableResponses.notFound(version: version))
            case .offsetMismatch(let held):
                if conflictForgets { _ = uploads.cancel(token) }
                return .respond(
                    ResumableResponses.conflict(
                        "Upload-Offset \(offset) is not the \(counted(Int(held), "byte")) held", held: held, version: version))
            case .busy(let held):
                if conflictForgets { _ = uploads.cancel(token) }
                return .respond(
                    ResumableResponses.conflict(
                        "another request is appending to this upload", held: held, version: version))
            }
        case .retrieveOffset(let token):
            guard let held = uploads.upload(token)?.takeOver() else {
                return .respond(ResumableResponses.notFound(version: version))
            }
            return .respond(ResumableResponses.offset(held, version: version))
        case .cancel(let token):
            guard uploads.cancel(token) else {
                return .respond(ResumableResponses.notFound(version: version))
            }
            return .respond(ResumableResponses.cancelled(version: version))
        case .methodNotAllowed:
            return .respond(ResumableResponses.methodNotAllowed(version: version))
        }
    }

    /// Acts on the end of an attached request's body: completes the upload or detaches from it.
    /// - Throws: a storage failure while completing (the upload is forgotten then).
    func end(_ attached: Attached) throws(SinkError) -> End {
        let upload = attached.upload
        let version = attached.version
        guard attached.complete else {
            let held = upload.release(attached.attachment)
            if let reason = upload.cutReason(attached.attachment) { return .cut(reason: reason) }
            guard let held else { return .gone(ResumableResponses.notFound(version: version)) }
            return .incomplete(
                held: held,
                headers: ResumableResponses.outcomeFields(
                    location: attached.location, complete: false, offset: held, version: version))
        }
        let completion: ResumableUpload.Completion?
        do {
            completion = try upload.complete(by: attached.attachment)
        } catch {
            uploads.remove(upload.token)
            throw error
        }
        guard let completion else {
            if let reason = upload.cutReason(attached.attachment) { return .cut(reason: reason) }
            return .gone(ResumableResponses.notFound(version: version))
        }
        uploads.remove(upload.token)
        return .completed(
            completion,
            headers: ResumableResponses.outcomeFields(
                location: attached.location, complete: true, offset: completion.byteCount, version: version))
    }

    /// `http://HOST/uploads/TOKEN` from the request's `Host`, or the listener's address when
    /// the request has none (or one with characters no host has).
    func location(of upload: ResumableUpload, head: HTTPRequestHead) -> String {
        let allowed: (Character) -> Bool = { character in
            character.isASCII && (character.isLetter || character.isNumber || ".-_~:[]%".contains(character))
        }
        let authority = head.headers.first(named: "host").flatMap { host in
            !host.isEmpty && host.allSatisfy(allowed) ? "http://\(host)" : nil
        }
        return (authority ?? origin) + ResumableRequest.pathPrefix + upload.token
    }
}
