import Foundation
import StreamUpSystem

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The URLSession delegate of one request of an upload (a segment, a protocol request, or the
/// one live request): hands over the body stream, collects the response, and reports completion. The only place in StreamUp that deals in delegate callbacks.
///
/// Thread safety: callbacks arrive on the session's serial delegate queue; `state` is guarded by
/// its `Mutex` because `finish` results are read from the uploader's task.
final class UploadTaskDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private struct State {
        var bodyRequests = 0
        var response: HTTPURLResponse?
        var body = Data()
        /// More body came than `maxResponseBodyBytes` keeps.
        var bodyCut = false
        /// The answer was ended here, not by the server: more body came than is kept, or it
        /// did not end within `answerTimeout` of its head. Its status stands.
        var endedHere = false
        var completion: CheckedContinuation<Result<UploadResponse, StreamUpError>, Never>?
        var result: Result<UploadResponse, StreamUpError>?
        /// The 401/407 that carried an authentication challenge we turned down.
        var refusedChallenge: HTTPURLResponse?
        /// Ends an answer that takes longer than `answerTimeout`; cancelled at completion.
        var answerTimer: AnswerTimer?
    }

    /// The streamed body; nil for a request without one (the resumable protocol's create, HEAD and completion).
    private let body: (any RequestBody)?
    private let maxResponseBodyBytes: Int
    /// The longest an answer may take from its head to its body's end.
    private let answerTimeout: Duration
    private let onEvent: @Sendable (UploadEvent) -> Void
    /// The request is one segment of an acknowledged stream (for the failure's words).
    private let segmented: Bool
    /// The server answered an earlier request of this upload (for the failure's words).
    private let answeredBefore: Bool
    /// The server (`host:port`) the request goes to, if the session keeps track of it.
    let server: String?
    private let state = Mutex(State())

    init(
        body: (any RequestBody)?, maxResponseBodyBytes: Int, answerTimeout: Duration, segmented: Bool = false, answeredBefore: Bool = false,
        server: String? = nil, onEvent: @escaping @Sendable (UploadEvent) -> Void
    ) {
        self.server = server
        self.body = body
        self.answerTimeout = answerTimeout
        self.segmented = segmented
        self.answeredBefore = answeredBefore
        self.maxResponseBodyBytes = maxResponseBodyBytes
        self.onEvent = onEvent
    }

    /// Waits for the task to complete and returns its outcome.
    func outcome() async -> Result<UploadResponse, StreamUpError> {
        await withCheckedContinuation { continuation in
            let ready: Result<UploadResponse, StreamUpError>? = state.withLock { state in
                if let result = state.result { return result }
                state.completion = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    // MARK: URLSessionTaskDelegate

    func urlSession(
        _ session: URLSession, task: URLSessionTask,
        needNewBodyStream completionHandler: @escaping (InputStream?) -> Void
    ) {
        // The first call hands over the body's stream. A later call means URLSession wants to
        // send the body again (DesignNotes, platform fact 2): the body decides whether it can.
        guard let body else { return completionHandler(nil) }
        let attempt = state.withLock { state in
            state.bodyRequests += 1
            return state.bodyRequests
        }
        let stream = body.stream(forAttempt: attempt)
        // A body that refused has failed: end the request now. (A `Data` body has no stream to
        // fail, and libcurl would go on with the head and none of the body.)
        if stream == nil, body.failure != nil { TaskReference(task).cancelSoon() }
        completionHandler(stream)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        // Following a redirect would need the body again; the 3xx becomes the answer instead.
        onEvent(.redirectRefused(statusCode: response.statusCode, location: response.value(forHTTPHeaderField: "Location")))
        completionHandler(nil)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        // Answering a challenge means sending the body again, which a live stream cannot do;
        // and on Linux "default handling" without a stored credential never completes the task.
        // So the challenge is declined, and its 401/407 becomes the answer the caller sees.
        if let response = challenge.failureResponse as? HTTPURLResponse {
            state.withLock { $0.refusedChallenge = response }
            onEvent(.responseReceived(statusCode: response.statusCode, headers: Self.headers(of: response)))
        }
        completionHandler(.cancelAuthenticationChallenge, nil)
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        if let http = response as? HTTPURLResponse {
            // corelibs reports informational answers (104 Upload Resumption Supported) here too;
            // only a final one is the answer.
            if http.statusCode >= 200 {
                // The request timeout is an idle timer (DesignNotes, platform fact 4): a body
                // that trickles on for ever never trips it. The whole answer gets this long.
                // The timer is cancelled when the task completes: a pending timer that held
                // the task would keep it (and its body) alive for the whole timeout.
                let timer = DispatchSource.makeTimerSource(queue: .global())
                timer.schedule(deadline: .now() + answerTimeout.seconds)
                let task = WeakTask(dataTask)
                timer.setEventHandler { [weak self] in
                    guard let self, let task = task.value else { return }
                    self.endAnswer(TaskReference(task))
                }
                let armed = AnswerTimer(source: timer)
                let earlier = state.withLock { state in
                    state.response = http
                    defer { state.answerTimer = armed }
                    return state.answerTimer
                }
                earlier?.source.cancel()
                timer.resume()
            }
            onEvent(.responseReceived(statusCode: http.statusCode, headers: Self.headers(of: http)))
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let limit = maxResponseBodyBytes
        let full = state.withLock { state in
            let room = limit - state.body.count
            if room > 0 { state.body.append(data.prefix(room)) }
            if data.count > room { state.bodyCut = true }
            return state.bodyCut
        }
        // The rest of a body longer than is kept is not worth reading (it may never end).
        if full { endAnswer(TaskReference(dataTask)) }
    }

    /// Ends the answer here (its head and the body kept so far are the answer), unless it has
    /// ended already.
    private func endAnswer(_ task: TaskReference<URLSessionDataTask>) {
        let ends = state.withLock { state -> Bool in
            guard state.result == nil, !state.endedHere, state.response != nil else { return false }
            state.endedHere = true
            state.bodyCut = true
            return true
        }
        if ends { task.cancelSoon() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let bytesSent = body?.bytesSent ?? 0
        let failure = body?.failure
        let (continuation, result, timer) = state.withLock {
            state -> (CheckedContinuation<Result<UploadResponse, StreamUpError>, Never>?, Result<UploadResponse, StreamUpError>, AnswerTimer?) in
            let result: Result<UploadResponse, StreamUpError>
            if let challenged = state.refusedChallenge {
                result = .success(
                    UploadResponse(
                        statusCode: challenged.statusCode, headers: Self.headers(of: challenged), body: state.body,
                        bytesSent: bytesSent, isBodyCut: state.bodyCut))
            } else if state.endedHere, let response = state.response {
                result = .success(
                    UploadResponse(
                        statusCode: response.statusCode, headers: Self.headers(of: response), body: state.body,
                        bytesSent: bytesSent, isBodyCut: true))
            } else if let error {
                result = .failure(
                    failure ?? TransportFailure.error(for: error, url: task.originalRequest?.url, segmented: segmented, answeredBefore: answeredBefore))
            } else if let response = state.response ?? (task.response as? HTTPURLResponse) {
                result = .success(
                    UploadResponse(
                        statusCode: response.statusCode, headers: Self.headers(of: response), body: state.body,
                        bytesSent: bytesSent, isBodyCut: state.bodyCut))
            } else {
                result = .failure(StreamUpError(.transport, "the server closed the connection without an HTTP answer"))
            }
            state.result = result
            defer {
                state.completion = nil
                state.answerTimer = nil
            }
            return (state.completion, result, state.answerTimer)
        }
        timer?.source.cancel()
        // The body will not be read any more: make a waiting producer's writes fail.
        body?.close()
        continuation?.resume(returning: result)
    }

    // MARK: Helpers

    private static func headers(of response: HTTPURLResponse) -> [String: String] {
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            headers["\(name)"] = "\(value)"
        }
        return headers
    }
}

/// A task the answer timer may end, held weakly: the timer must not keep a finished task
/// (and its body) alive until it fires.
///
/// Thread safety: as ``TaskReference``; the weak reference is read once, when the timer fires.
private final class WeakTask: @unchecked Sendable {
    weak var value: URLSessionDataTask?
    init(_ value: URLSessionDataTask) { self.value = value }
}

/// Carries the answer's timer into the delegate's locked state.
///
/// Thread safety: a dispatch source may be cancelled from any thread; this box only vouches for
/// that to the compiler.
private struct AnswerTimer: @unchecked Sendable {
    let source: any DispatchSourceTimer
}
