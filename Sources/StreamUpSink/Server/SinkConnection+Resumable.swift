import Foundation
import StreamUpHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The glue to resumable uploads (``ResumableRequestHandler``): a protocol head attaches to its
// upload, body bytes go to the upload as they arrive, the end completes it or answers `201`, and
// the request detaches before the connection's descriptor is closed.
extension SinkConnection {
    /// A resumable-upload head arrived: create, attach, or prepare the answer.
    mutating func beginResumable(
        _ resumable: ResumableRequest, head: HTTPRequestHead, sequence: Int, _ socket: borrowing Socket
    ) -> Next {
        var handler = ResumableRequestHandler(
            uploads: context.uploads, bindsStreams: context.streams != nil, origin: context.origin)
        handler.conflictForgets = context.configuration.faults.conflictForgetsUpload
        let attachment = ResumableUpload.Attachment(request: sequence, descriptor: socket.descriptor)
        let start: ResumableRequestHandler.Start
        do {
            start = try handler.start(resumable, head: head, attachment: attachment)
        } catch {
            request = InFlight(sequence: sequence, head: head, body: makeBody(file: nil), start: messageStart ?? .now)
            reject(status: 500, reason: "storing the upload failed: \(error.details)", socket)
            return .close
        }
        switch start {
        case .respond(let response):
            return prepare(response, head: head, sequence: sequence, socket)
        case .attached(let upload):
            attached = upload
            request = InFlight(
                sequence: sequence, head: head, body: makeBody(file: nil, uploading: true), start: messageStart ?? .now)
            // No 1xx to an HTTP/1.0 client (RFC 9110 §15.2).
            if let location = upload.location, context.configuration.sendsUploadResumptionSupported,
                head.minorVersion >= 1
            {
                do {
                    try socket.send(ResumableResponses.resumptionSupported(location: location, version: upload.version))
                } catch {
                    abort(failure: "sending 104 Upload Resumption Supported failed: \(error.details)")
                    return .close
                }
            }
            return sendContinueIfAsked(head, socket)
        }
    }

    /// Hands body bytes to the resumable upload the request is attached to. An armed
    /// ``SinkFaults/forgetUploadsAfterBytes`` cuts `bytes` at its count and sets `forgetting`:
    /// the uploads are forgotten once those bytes are stored. Reports and returns `.close` when
    /// the upload cannot take them.
    mutating func appendToUpload(
        _ attached: ResumableRequestHandler.Attached, _ bytes: inout UnsafeRawBufferPointer, forgetting: inout Bool,
        _ socket: borrowing Socket
    ) -> Next {
        if let upTo = context.faultState.claimForget(adding: bytes.count) {
            bytes = UnsafeRawBufferPointer(rebasing: bytes[..<upTo])
            forgetting = true
        }
        let outcome: ResumableUpload.AppendOutcome
        do {
            outcome = try attached.upload.append(bytes, by: attached.attachment)
        } catch {
            reject(status: 500, reason: "storing the upload failed: \(error.details)", socket)
            return .close
        }
        switch outcome {
        case .appended:
            break
        case .detached:
            reportUnfinished(status: 0, failure: "upload taken over by another request")
            return .close
        case .ended:
            reportUnfinished(status: 0, failure: "upload cancelled or forgotten meanwhile")
            return .close
        }
        return .keepReading
    }

    /// An attached request ended: complete the upload (`200` with the usual summary, for the
    /// whole upload) or answer `201` with the bytes held.
    mutating func finishUpload(
        _ upload: ResumableRequestHandler.Attached, _ finished: InFlight, _ summary: RequestBody.Summary,
        trailers: [HTTPField], keepAlive: Bool, _ socket: borrowing Socket
    ) -> Next {
        let handler = ResumableRequestHandler(
            uploads: context.uploads, bindsStreams: context.streams != nil, origin: context.origin)
        var summary = summary
        summary.storedFile = upload.upload.file
        let end: ResumableRequestHandler.End
        do {
            end = try handler.end(upload)
        } catch {
            report(finished, summary, trailers: trailers, status: 500, failure: "storing the upload failed: \(error.details)")
            sendError(status: 500, reason: "storing the upload failed", socket)
            lingeringClose(socket)
            return .close
        }
        let response: [UInt8]
        switch end {
        case .completed(let completion, let headers):
            summary.sha256 = completion.sha256
            summary.storedFile = completion.storedFile
            if context.faultState.claimLostAnswer() { return loseAnswer(finished, summary, trailers: trailers, socket) }
            var whole = report(finished, summary, trailers: trailers, status: 200, failure: nil, uploadOffset: completion.byteCount)
            whole.bodyByteCount = completion.byteCount
            response = HTTPResponse.json(
                status: 200, body: HTTPResponse.summary(of: whole, streamOffset: completion.streamOffset),
                close: !keepAlive, extraHeaders: headers)
        case .incomplete(let held, let headers):
            report(finished, summary, trailers: trailers, status: 201, failure: nil, uploadOffset: held)
            response = HTTPResponse.empty(status: 201, close: !keepAlive, extraHeaders: headers)
        case .gone(let prepared):
            report(finished, summary, trailers: trailers, status: prepared.status, failure: "upload cancelled or forgotten meanwhile")
            response = prepared.bytes(close: !keepAlive, isHead: false)
        case .cut(let reason):
            report(finished, summary, trailers: trailers, status: 0, failure: reason)
            return .close
        }
        return (try? socket.send(response)) == nil ? .close : (keepAlive ? .keepReading : .close)
    }

    /// Detaches the request in flight from its resumable upload (keeping every byte it stored);
    /// returns the bytes the upload holds, `nil` when there was none or it has ended.
    @discardableResult
    mutating func releaseUpload() -> Int? {
        guard let current = attached.take() else { return nil }
        return current.upload.release(current.attachment)
    }
}
