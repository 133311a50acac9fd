import Foundation
import StreamUpHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// How a connection's requests end when they do not end well: rejected with a status, timed
// out, shed, aborted, reported.
extension SinkConnection {
    /// The request cannot go on: report it with `status`, answer, and close gracefully.
    mutating func reject(status: Int, reason: String, _ socket: borrowing Socket) {
        reportUnfinished(status: status, failure: reason)
        sendError(status: status, reason: reason, socket)
        lingeringClose(socket)
    }

    /// A clock ran out (see ``ConnectionDeadlines``): answer `408` if a request had begun, and close.
    mutating func expire(_ expiry: ConnectionDeadlines.Expiry, _ socket: borrowing Socket) {
        guard request != nil || !parser.isAtMessageStart else { return }
        let configuration = context.configuration
        let reason =
            switch expiry {
            case .idle:
                "no data for \(configuration.idleTimeout)"
            case .head:
                "request head not complete within \(configuration.headTimeout)"
            case .bodyRate:
                "body arrived slower than \(configuration.minimumBodyRate?.bytesPerSecond ?? 0) bytes per second"
            }
        reject(status: 408, reason: reason, socket)
    }

    /// The connection was shed to make room for a newer one (see ``ConnectionRegistry``): answer
    /// `503` if a request had begun (without blocking: this client may not be reading), and close.
    mutating func shed(_ socket: borrowing Socket) {
        guard request != nil || !parser.isAtMessageStart else { return }
        let reason = "shed at the connection limit: this request's head was the slowest to arrive"
        reportUnfinished(status: 503, failure: reason)
        let response = HTTPResponse.json(
            status: 503, body: HTTPResponse.error(status: 503, reason: reason), close: true,
            extraHeaders: [SinkHeaderField(name: "Retry-After", value: "1")])
        try? socket.send(response, flags: CInt(MSG_DONTWAIT))
        socket.shutdown(CInt(SHUT_WR))
    }

    /// The connection ended under a request (client gone, or the server stopping).
    mutating func abort(failure: String) {
        guard request != nil || !parser.isAtMessageStart else { return }
        if let attached, let reason = attached.upload.cutReason(attached.attachment) {
            reportUnfinished(status: 0, failure: reason)
            return
        }
        reportUnfinished(status: 0, failure: failure)
    }

    /// Reports the request in flight (or the partial head) as incomplete, after detaching it
    /// from its resumable upload.
    mutating func reportUnfinished(status: Int, failure: String) {
        let uploadFile = attached?.upload.file
        let held = releaseUpload()
        if let unfinished = request.take() {
            var summary = unfinished.body.finish(complete: false)
            summary.storedFile = uploadFile ?? summary.storedFile
            report(unfinished, summary, trailers: [], status: status, failure: failure, uploadOffset: held)
        } else {
            context.report(
                SinkRequestEvent(
                    sequence: context.nextSequence(), method: "", path: "", version: "",
                    headers: [], trailers: [], bodyByteCount: 0, sha256: nil, body: nil, storedFile: nil,
                    duration: messageStart.map { .now - $0 } ?? .zero,
                    status: status, isComplete: false, peer: peer, failure: failure))
        }
    }

    @discardableResult
    func report(
        _ request: InFlight, _ summary: RequestBody.Summary, trailers: [HTTPField], status: Int, failure: String?,
        uploadOffset: Int? = nil, complete: Bool? = nil
    ) -> SinkRequestEvent {
        let event = SinkRequestEvent(
            sequence: request.sequence, method: request.head.method, path: request.head.target,
            version: request.head.version, headers: request.head.headers.map(SinkHeaderField.init),
            trailers: trailers.map(SinkHeaderField.init),
            bodyByteCount: summary.byteCount, sha256: summary.sha256, body: summary.body,
            storedFile: summary.storedFile, duration: .now - request.start, status: status,
            isComplete: complete ?? (failure == nil), peer: peer, failure: failure, uploadOffset: uploadOffset)
        context.report(event)
        return event
    }

    func sendError(status: Int, reason: String, _ socket: borrowing Socket) {
        let response = HTTPResponse.json(status: status, body: HTTPResponse.error(status: status, reason: reason), close: true)
        try? socket.send(response)
    }

    /// Half-closes, then reads and discards what the client still sends (up to 1 MiB, for at
    /// most the idle timeout or 2 s). Closing with unread input would make the kernel send a
    /// reset, which can destroy the error response before the client reads it.
    func lingeringClose(_ socket: borrowing Socket) {
        socket.shutdown(CInt(SHUT_WR))
        try? socket.setTimeouts(min(context.configuration.idleTimeout, .seconds(2)))
        var scratch = [UInt8](repeating: 0, count: 16_384)
        var discarded = 0
        while discarded < 1 << 20 {
            let result = scratch.withUnsafeMutableBytes { try? socket.receive(into: $0) }
            guard case .bytes(let count) = result else { return }
            discarded += count
        }
    }
}
