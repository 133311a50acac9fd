import Foundation
import StreamUpHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Injected faults (``SinkFaults``): failures, lost answers, drops, stalls, forgotten uploads,
// and the read throttle.
extension SinkConnection {
    /// The answer to a request chosen by ``SinkFaults/failNextRequests``.
    func injectedFailure(_ head: HTTPRequestHead) -> PreparedResponse {
        let faults = context.configuration.faults
        let status = faults.failStatus
        let reason = "injected fault: answering \(status)"
        var headers = faults.retryAfterValue.map { [SinkHeaderField(name: "Retry-After", value: String($0))] } ?? []
        if head.headers.first(named: ResumableUploadFields.version) != nil {
            headers.append(ResumableResponses.versionField(ResumableRequest.defaultVersion))
        }
        return PreparedResponse(
            status: status, headers: headers, json: HTTPResponse.error(status: status, reason: reason), failure: reason)
    }

    /// Injected fault: the request was stored, but its answer is lost (the connection is reset).
    func loseAnswer(
        _ finished: InFlight, _ summary: RequestBody.Summary, trailers: [HTTPField], _ socket: borrowing Socket
    ) -> Next {
        report(finished, summary, trailers: trailers, status: 0, failure: "injected fault: stored, answer lost", complete: true)
        try? socket.setOption(SOL_SOCKET, SO_LINGER, linger(l_onoff: 1, l_linger: 0), name: "setsockopt(SO_LINGER)")
        return .close
    }

    /// The smallest byte count at which an armed drop or stall fault would act on the request
    /// in flight, or `nil` when none can.
    func armedFaultThreshold() -> Int? {
        guard let current = request, current.prepared == nil else { return nil }
        let state = context.faultState
        let drop =
            state.bytesUntilNextDrop.map { current.body.byteCount + $0 }
            ?? (state.isDropArmed ? state.faults.dropAfterBytes : nil)
        let stall = state.isStallArmed ? state.faults.stallAfterBytes : nil
        return [drop, stall].compactMap { $0 }.min()
    }

    /// Drops or stalls the connection when the request in flight has reached an armed fault's
    /// byte count and claims it; returns `.close` when it did.
    mutating func injectByteFault(_ socket: borrowing Socket) -> Next {
        guard let current = request, current.head.hasBody, current.prepared == nil else { return .keepReading }
        let received = current.body.byteCount
        let state = context.faultState
        if state.claimDrop(received: received) {
            reportUnfinished(status: 0, failure: "injected fault: connection dropped after \(received) body bytes")
            // Linger 0: `close` sends a reset instead of a graceful end of file.
            try? socket.setOption(SOL_SOCKET, SO_LINGER, linger(l_onoff: 1, l_linger: 0), name: "setsockopt(SO_LINGER)")
            return .close
        }
        if let limit = state.faults.stallAfterBytes, received >= limit, state.claimStall() {
            let deadline = ContinuousClock.now + context.configuration.idleTimeout
            throttle(until: deadline)
            let why = context.isStopping ? "server stopped" : "idle timeout"
            reportUnfinished(status: 0, failure: "injected fault: stalled after \(received) body bytes (\(why))")
            return .close
        }
        return .keepReading
    }

    /// The request in flight carried byte ``SinkFaults/forgetUploadsAfterBytes`` of resumable
    /// uploads: forget them all, as a restart would, and reset this connection.
    mutating func forgetUploads(_ socket: borrowing Socket) -> Next {
        let limit = context.configuration.faults.forgetUploadsAfterBytes ?? 0
        let uploadFile = attached?.upload.file
        let held = releaseUpload()
        context.uploads.forgetAll()
        guard let unfinished = request.take() else { return .close }
        var summary = unfinished.body.finish(complete: false)
        summary.storedFile = uploadFile
        report(
            unfinished, summary, trailers: [], status: 0,
            failure: "injected fault: resumable uploads forgotten after \(limit) upload bytes", uploadOffset: held)
        try? socket.setOption(SOL_SOCKET, SO_LINGER, linger(l_onoff: 1, l_linger: 0), name: "setsockopt(SO_LINGER)")
        return .close
    }

    /// Sleeps until `deadline` in steps of at most 20 ms, returning early when the server stops.
    func throttle(until deadline: ContinuousClock.Instant) {
        while !context.isStopping {
            let left = deadline - .now
            guard left > .zero else { return }
            Thread.sleep(forTimeInterval: min(left, .milliseconds(20)).seconds)
        }
    }
}
