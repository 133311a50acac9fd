import Foundation

/// Resumable mode: the stream is one upload of the IETF resumable-upload protocol (interop
/// version 6), created once and appended to with one PATCH per segment from the acknowledged
/// offset. After any failure a HEAD asks the server how much it holds and the next PATCH starts
/// exactly there: nothing lost, nothing sent twice.
///
/// - Create: the configured method (POST) to the target with `Upload-Complete: ?0` and an empty
///   body; the answer's `Location` is the upload. The creation also carries `Streamup-Stream-Id`
///   and `Streamup-Offset`, so a receiver can join an upload created after the first one was
///   lost (404) to the stream without gap or duplicate.
/// - Append: `PATCH` with `Upload-Offset`, `Upload-Complete: ?0` and
///   `Content-Type: application/partial-upload`; the answer's `Upload-Offset` is checked.
/// - Failure (transport, timeout, 5xx, 409): HEAD before the next PATCH; 404 or 410 means the
///   upload is gone, and a new one starts at the acknowledged offset.
/// - End: once every byte is acknowledged, an empty `PATCH` with `Upload-Complete: ?1`; its
///   answer is the upload's answer.
///
/// Thread safety: its state is confined to one uploader's delivery task, which runs one step at
/// a time (``DeliveryProtocol``); the uploader only holds it, never touches it from elsewhere.
final class ResumableDelivery: DeliveryProtocol, @unchecked Sendable {
    private var upload: ResumableUploadReference?
    private var mustCheckOffset: Bool
    /// The completing PATCH has gone out at least once (with every byte acknowledged).
    private var completionSent = false
    /// The server's last 2xx for this upload (creation or append).
    private var lastAcknowledgement: UploadResponse?
    private let spool: SpoolStorage?

    /// - Parameter resuming: an upload an earlier run was appending to (from the spool).
    init(resuming: ResumableUploadReference?, spool: SpoolStorage?) {
        upload = resuming
        mustCheckOffset = resuming != nil
        self.spool = spool
    }

    func step(_ uploader: ReliableUploader) async throws -> DeliveryStep {
        guard let upload, let url = URL(string: upload.url) else { return try await create(uploader) }
        if mustCheckOffset { return try await checkOffset(uploader, upload, url) }
        let offset = uploader.replay.acknowledgedOffset
        if uploader.replay.isEnded && offset == uploader.replay.endOffset {
            return try await complete(uploader, upload, url)
        }
        return try await append(uploader, upload, url, from: offset)
    }

    private func create(_ uploader: ReliableUploader) async throws -> DeliveryStep {
        let base = uploader.replay.acknowledgedOffset
        var configuration = uploader.configuration
        configuration.headers += protocolFields([
            (ResumableFields.complete, "?0"),
            ("Streamup-Stream-Id", uploader.streamID),
            ("Streamup-Offset", String(base)),
        ])
        let method = configuration.method == "PATCH" ? "POST" : configuration.method
        let answer = try await ControlRequest.send(method, configuration, onEvent: uploader.onEvent)
        guard answer.isSuccess else { return .failure(answer, uploader.options.retry) }
        guard let location = answer.value(forHeader: "Location"),
              let url = URL(string: location, relativeTo: configuration.url)?.absoluteURL,
              url.scheme == "http" || url.scheme == "https"
        else {
            throw StreamUpError(.protocolError, "\(configuration.url.absoluteString) answered \(answer.statusCode) without an upload Location: it does not speak resumable uploads (\(ResumableFields.version) \(ResumableFields.interopVersion))")
        }
        try remember(ResumableUploadReference(url: url.absoluteString, base: base, target: configuration.url.absoluteString))
        lastAcknowledgement = answer
        return .progressed
    }

    private func checkOffset(_ uploader: ReliableUploader, _ upload: ResumableUploadReference, _ url: URL) async throws -> DeliveryStep {
        let answer = try await ControlRequest.send("HEAD", configuration(uploader, url, []), onEvent: uploader.onEvent)
        let gone = answer.statusCode == 404 || answer.statusCode == 410
        if completionSent && (gone || (answer.isSuccess && ResumableFields.boolean(answer.value(forHeader: ResumableFields.complete)) == true)) {
            // The completion reached the server (it forgets or marks a completed upload), only
            // its answer was lost; every byte had been acknowledged. A new upload would only be
            // an empty duplicate.
            try remember(nil)
            uploader.onEvent(.notice("the answer to the completing request was lost; the server had acknowledged every byte and has completed the upload"))
            return .finished(lastAcknowledgement ?? answer)
        }
        if gone {
            try remember(nil)
            return .progressed
        }
        guard answer.isSuccess else { return .failure(answer, uploader.options.retry) }
        guard let held = ResumableFields.offset(of: answer) else {
            throw StreamUpError(.protocolError, "HEAD \(url.absoluteString) answered \(answer.statusCode) without a valid Upload-Offset")
        }
        let acknowledged = uploader.replay.acknowledgedOffset
        let position = upload.base + held
        guard position >= acknowledged else {
            throw StreamUpError(.protocolError, "the server now holds \(held) bytes of upload \(url.absoluteString) but had acknowledged \(acknowledged - upload.base)")
        }
        guard position <= uploader.highestSent else {
            throw StreamUpError(.protocolError, "the server claims \(held) bytes of upload \(url.absoluteString), more than was sent")
        }
        uploader.acknowledge(upTo: position)
        mustCheckOffset = false
        return .progressed
    }

    private func append(_ uploader: ReliableUploader, _ upload: ResumableUploadReference, _ url: URL, from offset: Int) async throws -> DeliveryStep {
        let configuration = configuration(uploader, url, [
            (ResumableFields.offset, String(offset - upload.base)),
            (ResumableFields.complete, "?0"),
        ])
        let segment: ReliableUploader.SegmentResult
        do {
            segment = try await uploader.sendSegment(configuration, from: offset)
        } catch {
            mustCheckOffset = true
            throw error
        }
        return try handle(segment.answer, uploader, upload, url) {
            let expected = offset - upload.base + segment.sent
            let held = ResumableFields.offset(of: segment.answer) ?? expected
            guard held >= offset - upload.base, held <= expected else {
                throw StreamUpError(.protocolError, "PATCH \(url.absoluteString) answered Upload-Offset \(held), outside the \(offset - upload.base)...\(expected) it could hold")
            }
            uploader.acknowledge(upTo: upload.base + held)
            lastAcknowledgement = segment.answer
            return .progressed
        }
    }

    private func complete(_ uploader: ReliableUploader, _ upload: ResumableUploadReference, _ url: URL) async throws -> DeliveryStep {
        let configuration = configuration(uploader, url, [
            (ResumableFields.offset, String(uploader.replay.endOffset - upload.base)),
            (ResumableFields.complete, "?1"),
        ])
        let answer: UploadResponse
        completionSent = true
        do {
            answer = try await ControlRequest.send("PATCH", configuration, onEvent: uploader.onEvent)
        } catch {
            mustCheckOffset = true
            throw error
        }
        return try handle(answer, uploader, upload, url) {
            try remember(nil)
            return .finished(answer)
        }
    }

    /// A 2xx runs `success`; a lost upload (404, 410) is re-created at the next step; any other
    /// failure asks for the offset again before the next PATCH.
    private func handle(_ answer: UploadResponse, _ uploader: ReliableUploader, _ upload: ResumableUploadReference, _ url: URL,
                        success: () throws -> DeliveryStep) throws -> DeliveryStep {
        if answer.isSuccess { return try success() }
        switch answer.statusCode {
        case 404, 410:
            try remember(nil)
            return .retry(answer)
        case 409:
            // An offset conflict (or a stale connection still attached): HEAD says where to go on.
            mustCheckOffset = true
            return .retry(answer)
        default:
            mustCheckOffset = true
            return .failure(answer, uploader.options.retry)
        }
    }

    /// The request to the upload URL: the caller's header fields (authorization) plus the
    /// protocol's; a PATCH body's content type is the protocol's.
    private func configuration(_ uploader: ReliableUploader, _ url: URL, _ fields: [(String, String)]) -> UploadConfiguration {
        var configuration = uploader.configuration
        configuration.url = url
        configuration.method = "PATCH"
        configuration.contentType = ResumableFields.patchContentType
        configuration.headers.removeAll { $0.name.caseInsensitiveCompare("Content-Type") == .orderedSame }
        configuration.headers += protocolFields(fields)
        return configuration
    }

    private func protocolFields(_ fields: [(String, String)]) -> [UploadConfiguration.Header] {
        [UploadConfiguration.Header(name: ResumableFields.version, value: ResumableFields.interopVersion)]
            + fields.map { UploadConfiguration.Header(name: $0.0, value: $0.1) }
    }

    private func remember(_ upload: ResumableUploadReference?) throws {
        if upload != nil { completionSent = false }
        self.upload = upload
        mustCheckOffset = false
        try spool?.saveUpload(upload)
    }
}
