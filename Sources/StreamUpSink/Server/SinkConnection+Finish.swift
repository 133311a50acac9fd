#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import StreamUpHTTP

// A request's body has ended: store it, merge its stream or complete its upload, report, answer.
extension SinkConnection {
    /// The request ended: store, report, answer.
    mutating func finish(trailers: [HTTPField], _ socket: borrowing Socket) -> Next {
        guard let finished = request.take() else {
            preconditionFailure("parser ended a request that never began")
        }
        var summary = finished.body.finish(complete: true)
        let keepAlive = finished.head.keepAlive && !context.isStopping
        if let prepared = finished.prepared {
            report(finished, summary, trailers: trailers, status: prepared.status, failure: prepared.failure)
            let response = prepared.bytes(close: !keepAlive, isHead: finished.head.method == "HEAD")
            return (try? socket.send(response)) == nil ? .close : (keepAlive ? .keepReading : .close)
        }
        if let upload = attached.take() {
            return finishUpload(upload, finished, summary, trailers: trailers, keepAlive: keepAlive, socket)
        }
        var storageError = summary.storageError
        var streamOffset: Int?
        if storageError == nil, let stream = finished.stream, let streams = context.streams, let bodyPath = summary.storedFile {
            do {
                let outcome = try streams.merge(
                    streamID: stream.id, offset: stream.offset, bodyPath: bodyPath, bodyLength: summary.byteCount)
                _ = unlink(bodyPath)
                switch outcome {
                case .appended(let length):
                    streamOffset = length
                    summary.storedFile = streams.path(forStreamID: stream.id)
                case .gap(let expected):
                    summary.storedFile = nil
                    report(finished, summary, trailers: trailers, status: 409, failure: "gap in stream: expected offset \(expected)")
                    let response = HTTPResponse.json(
                        status: 409, body: HTTPResponse.streamGap(expectedOffset: expected), close: !keepAlive)
                    return (try? socket.send(response)) == nil ? .close : (keepAlive ? .keepReading : .close)
                }
            } catch {
                storageError = error
            }
        }
        if let storageError {
            report(finished, summary, trailers: trailers, status: 500, failure: "storing the body failed: \(storageError.details)")
            sendError(status: 500, reason: "storing the body failed", socket)
            lingeringClose(socket)
            return .close
        }
        if context.faultState.claimLostAnswer() { return loseAnswer(finished, summary, trailers: trailers, socket) }
        let event = report(finished, summary, trailers: trailers, status: 200, failure: nil)
        let response = HTTPResponse.json(
            status: 200, body: HTTPResponse.summary(of: event, streamOffset: streamOffset), close: !keepAlive)
        do {
            try socket.send(response)
        } catch {
            return .close
        }
        return keepAlive ? .keepReading : .close
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
}
