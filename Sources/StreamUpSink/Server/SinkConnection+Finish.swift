import Foundation
import StreamUpHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// A request's body has ended: store it, report, answer (streams: `+Streams`; uploads: `+Resumable`).
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
        if storageError == nil {
            do {
                switch try mergeStream(finished, &summary, trailers: trailers, keepAlive: keepAlive, socket) {
                case .notAStream:
                    break
                case .stored(let length):
                    streamOffset = length
                case .answered(let next):
                    return next
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
        if finished.losesAnswer || context.faultState.claimLostAnswer() {
            return loseAnswer(finished, summary, trailers: trailers, socket)
        }
        let event = report(finished, summary, trailers: trailers, status: 200, failure: nil)
        if let delay = context.configuration.faults.answerDelay {
            // An injected slow answer: this connection's thread alone waits (not past a stop).
            throttle(until: .now + delay)
        }
        let response = HTTPResponse.json(
            status: 200, body: HTTPResponse.summary(of: event, streamOffset: streamOffset), close: !keepAlive)
        do {
            try socket.send(response)
        } catch {
            return .close
        }
        return keepAlive ? .keepReading : .close
    }
}
