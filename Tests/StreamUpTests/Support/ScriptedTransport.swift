import Foundation
import StreamUpSystem
import StreamUpTestSupport

@testable import StreamUp

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An ``ExchangeTransport`` that answers each request as the test's script says, in the test
/// process, with no socket: the uploader's delivery (retries, backoff, smaller segments, the
/// window, endpoints, dead letters, partial refusals) runs as in production, on a manual
/// clock, while the test reads every request it made (as async-http-client's tests mock the
/// request executor).
///
/// The script gets each request (its body read to the end, as a server would) and its number
/// (0 for the first) and says what came of it: an answer, no answer (the connection broke after
/// the body went out), or a hold the test ends later with ``release(_:with:)``.
///
/// Thread safety: guarded by its `Mutex`; a held call's continuation is resumed outside it.
final class ScriptedTransport: ExchangeTransport, Sendable {
    /// One request as the server would see it.
    struct Request: Sendable {
        var method: String
        var url: URL
        var headers: [String: String]
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
        func header(_ name: String) -> String? {
            headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
        }
    }

    /// What came of a request.
    enum Reply: Sendable {
        /// The server answered.
        case answer(Int, headers: [String: String] = [:], body: String = "")
        /// No answer: the connection broke after the body went out (a lost answer).
        case noAnswer
        /// No answer yet: ``release(_:with:)`` gives it.
        case hold

        static let ok = Reply.answer(200)
    }

    private struct State {
        var requests: [Request] = []
        var held: [Int: CheckedContinuation<Result<UploadResponse, StreamUpError>, Never>] = [:]
        var heldReplies: [Int: Reply] = [:]
    }
    private let state = Mutex(State())
    private let script: @Sendable (Request, Int) -> Reply

    /// A transport that answers request number `n` with `script(request, n)`.
    init(_ script: @escaping @Sendable (Request, Int) -> Reply = { _, _ in .ok }) {
        self.script = script
    }

    /// A transport that answers with `replies` in order, then 200.
    convenience init(replies: [Reply]) {
        self.init { _, index in index < replies.count ? replies[index] : .ok }
    }

    /// The requests made so far, in order.
    var requests: [Request] { state.withLock { $0.requests } }

    /// The bodies of the requests made so far, as text.
    var bodies: [String] { requests.map(\.text) }

    /// Ends held request number `index` with `reply`.
    func release(_ index: Int, with reply: Reply) {
        let continuation = state.withLock { state in
            if let waiting = state.held.removeValue(forKey: index) { return Optional(waiting) }
            state.heldReplies[index] = reply
            return nil
        }
        continuation?.resume(returning: Self.outcome(reply))
    }

    func start(
        _ request: URLRequest, body: WindowBody?, ownConnection: Bool, onEvent: @escaping @Sendable (UploadEvent) -> Void
    ) -> any ExchangeCall {
        let bytes = body.map(Self.read) ?? []
        let seen = Request(
            method: request.httpMethod ?? "GET", url: request.url!, headers: request.allHTTPHeaderFields ?? [:], body: bytes)
        let index = state.withLock { state in
            state.requests.append(seen)
            return state.requests.count - 1
        }
        let reply = script(seen, index)
        if case .answer(let status, let headers, _) = reply { onEvent(.responseReceived(statusCode: status, headers: headers)) }
        body?.close()
        return Call(transport: self, index: index, reply: reply)
    }

    func invalidate() {}

    /// The body read to its end, as a server reads it (so the body counts its bytes sent).
    private static func read(_ body: WindowBody) -> [UInt8] {
        guard let stream = body.stream(forAttempt: 1) else { return [] }
        stream.open()
        var bytes: [UInt8] = []
        var piece = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = stream.read(&piece, maxLength: piece.count)
            if count <= 0 { break }
            bytes += piece[..<count]
        }
        return bytes
    }

    fileprivate static func outcome(_ reply: Reply) -> Result<UploadResponse, StreamUpError> {
        switch reply {
        case .answer(let status, let headers, let body):
            .success(UploadResponse(statusCode: status, headers: headers, body: Data(body.utf8), bytesSent: 0))
        case .noAnswer, .hold:
            .failure(StreamUpError(.transport, "the connection was closed before an answer came"))
        }
    }

    /// Waits for held request `index` (or a reply given before it waited), or the task's cancel.
    fileprivate func wait(_ index: Int) async -> Result<UploadResponse, StreamUpError> {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Result<UploadResponse, StreamUpError>? in
                    if let reply = state.heldReplies.removeValue(forKey: index) { return Self.outcome(reply) }
                    // A cancel that came before the wait began is seen here.
                    if Task.isCancelled { return .failure(StreamUpError(.cancelled, "the upload was cancelled")) }
                    state.held[index] = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let continuation = state.withLock { $0.held.removeValue(forKey: index) }
            continuation?.resume(returning: .failure(StreamUpError(.cancelled, "the upload was cancelled")))
        }
    }

    private struct Call: ExchangeCall {
        let transport: ScriptedTransport
        let index: Int
        let reply: Reply

        func outcome() async -> Result<UploadResponse, StreamUpError> {
            if case .hold = reply { return await transport.wait(index) }
            return ScriptedTransport.outcome(reply)
        }
    }
}
