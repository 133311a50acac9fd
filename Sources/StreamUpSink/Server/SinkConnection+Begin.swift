import Foundation
import StreamUpHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// A request's head has arrived: refuse it, prepare its answer, or open where its body goes.
extension SinkConnection {
    /// A head arrived: number the request, refuse a declared body over the limit, open its file
    /// (or its resumable upload), and send `100 Continue` if asked.
    mutating func begin(_ head: HTTPRequestHead, _ socket: borrowing Socket) -> Next {
        let sequence = context.nextSequence()
        var resumable: ResumableRequest?
        var invalid: ResumableRequest.Invalid?
        do {
            resumable = try ResumableRequest.identify(head)
        } catch {
            invalid = error
        }
        let allowance = bodyAllowance(resumable)
        if let allowance, case .length(let declared) = head.framing, declared > allowance {
            request = InFlight(sequence: sequence, head: head, body: makeBody(file: nil), start: messageStart ?? .now)
            reject(status: 413, reason: SinkConnection.declaredTooLarge(declared, allowance: allowance, resumable), socket)
            return .close
        }
        if let responder = context.responder {
            // Outside any lock: the responder is the caller's code.
            let answer = responder(head.method, head.target)
            return prepare(
                PreparedResponse(status: answer.status, headers: answer.headers, json: answer.body, contentType: answer.contentType),
                head: head, sequence: sequence, socket)
        }
        let next: Next
        if context.faultState.claimFailure() {
            next = prepare(injectedFailure(head), head: head, sequence: sequence, socket)
        } else if let invalid {
            next = prepare(ResumableResponses.invalid(invalid.reason), head: head, sequence: sequence, socket)
        } else if let resumable {
            next = beginResumable(resumable, head: head, sequence: sequence, socket)
        } else {
            next = beginPlain(head, sequence: sequence, socket)
        }
        request?.bodyLimit = allowance
        return next
    }

    /// The body bytes a request may carry: ``SinkConfiguration/maxBodyBytes``, less what the
    /// resumable upload it appends to already holds; `nil` without a limit.
    func bodyAllowance(_ resumable: ResumableRequest?) -> Int? {
        guard let limit = context.configuration.maxBodyBytes else { return nil }
        if case .append(_, let offset, _) = resumable?.kind {
            return max(0, limit - offset)
        }
        return limit
    }

    /// Why a declared `Content-Length` is refused.
    static func declaredTooLarge(_ declared: Int, allowance: Int, _ resumable: ResumableRequest?) -> String {
        guard case .append(_, let offset, _) = resumable?.kind else {
            return "the body of \(counted(declared, "byte")) exceeds the limit of \(counted(allowance, "byte"))"
        }
        return "the upload would hold \(counted(offset + declared, "byte")), over the limit of \(counted(offset + allowance, "byte"))"
    }

    /// An ordinary request's head: open its file and send `100 Continue` if asked.
    mutating func beginPlain(_ head: HTTPRequestHead, sequence: Int, _ socket: borrowing Socket) -> Next {
        var stream: (id: String, offset: Int)?
        if context.streams != nil {
            do {
                stream = try SinkConnection.streamHeaders(head)
            } catch {
                request = InFlight(sequence: sequence, head: head, body: makeBody(file: nil), start: messageStart ?? .now)
                reject(status: 400, reason: error.reason, socket)
                return .close
            }
        }
        var file: BodyFile?
        if let storage = context.storage, head.framing != .none {
            do {
                file = try storage.createFile(sequence: sequence, method: head.method)
            } catch {
                request = InFlight(sequence: sequence, head: head, body: makeBody(file: nil), start: messageStart ?? .now)
                reject(status: 500, reason: "storing the body failed: \(error.details)", socket)
                return .close
            }
        }
        request = InFlight(sequence: sequence, head: head, body: makeBody(file: file), start: messageStart ?? .now)
        request?.stream = stream
        let losesAnswer = stream.map { context.faultState.countStreamRequest($0.id) } ?? false
        request?.losesAnswer = losesAnswer
        return sendContinueIfAsked(head, socket)
    }

    /// Starts a request that is answered `response` once its body has been read and discarded.
    mutating func prepare(
        _ response: PreparedResponse, head: HTTPRequestHead, sequence: Int, _ socket: borrowing Socket
    ) -> Next {
        var refused = InFlight(
            sequence: sequence, head: head,
            body: RequestBody(hash: false, file: nil, keepInMemory: false, memoryLimit: 0),
            start: messageStart ?? .now)
        refused.prepared = response
        request = refused
        return sendContinueIfAsked(head, socket)
    }

    /// Sends `100 Continue` when the client waits for it.
    mutating func sendContinueIfAsked(_ head: HTTPRequestHead, _ socket: borrowing Socket) -> Next {
        if head.expectsContinue && head.hasBody && head.minorVersion >= 1 {
            do {
                try socket.send(HTTPResponse.continueInterim)
            } catch {
                abort(failure: "sending 100 Continue failed: \(error.details)")
                return .close
            }
        }
        return .keepReading
    }

    /// The body of an ordinary request, or (`uploading`) of one attached to a resumable upload,
    /// which stores and hashes the bytes itself.
    func makeBody(file: BodyFile?, uploading: Bool = false) -> RequestBody {
        let configuration = context.configuration
        return RequestBody(
            hash: configuration.hashBodies && !uploading, file: file,
            keepInMemory: configuration.keepBodiesInMemory, memoryLimit: configuration.maxBodyBytesInMemory)
    }
}
